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


def test_start_of_today_is_local_midnight_and_follows_the_test_clock(tmp_path, monkeypatch):
    from datetime import datetime

    monkeypatch.setenv("TZ", "Europe/Berlin")
    time.tzset()
    try:
        t = datetime(2026, 3, 29, 15, 30).timestamp()  # the day clocks go forward: 23 hours long
        assert clock.start_of_today(t) == datetime(2026, 3, 29).timestamp()
        assert clock.day_starts(t, 3) == [datetime(2026, 3, d).timestamp() for d in (27, 28, 29)]
        assert clock.start_of_day(datetime(2026, 3, 29).timestamp()) == datetime(2026, 3, 29).timestamp()
        f = tmp_path / "clock"
        monkeypatch.setenv("SCALPEL_TEST_CLOCK_FILE", str(f))
        today = clock.start_of_today()
        clock.set_offset(f, 86400)
        assert clock.start_of_today() > today  # "today" is the test clock's day
    finally:
        monkeypatch.undo()
        time.tzset()
