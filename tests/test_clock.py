import time

from scalpel_desktop import clock


def test_offset_file_moves_now(tmp_path, monkeypatch):
    f = tmp_path / "clock"
    monkeypatch.setenv("SCALPEL_TEST_CLOCK_FILE", str(f))
    assert abs(clock.now() - time.time()) < 1
    clock.set_offset(f, 400)
    assert 399 < clock.now() - time.time() < 401
    clock.set_offset(f, 1000.5)
    assert 999 < clock.now() - time.time() < 1002
