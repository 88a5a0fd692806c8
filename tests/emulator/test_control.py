"""The emulator's control routes under /_emulator/: each does what its Python twin does."""

from __future__ import annotations

import json

import pytest

from scalpel_desktop.emulator.testing import running_emulator
from tests.emulator.helpers import KEY, get, msg_body, post


@pytest.fixture(scope="module")
def emu():
    with running_emulator() as handle:
        yield handle


@pytest.fixture(autouse=True)
def fresh(emu):
    emu.clear(cache=True)
    emu.emulator.offset = 0.0
    emu.set_script("default")


def control(emu, route, spec=None):
    status, _, raw = post(f"{emu.url}/_emulator/{route}", spec if spec is not None else b"")
    return status, json.loads(raw)


def test_health_counts_requests_and_shows_the_clock(emu):
    post(emu.url + "/v1/messages", msg_body(), KEY)
    status, raw = get(emu.url + "/_emulator/health")
    data = json.loads(raw)
    assert status == 200 and data["ok"] and data["emulator"] and data["offset"] == 0
    assert data["requests"] == 1


def test_requests_since(emu):
    for text in ("a", "b", "c"):
        post(emu.url + "/v1/messages", msg_body([{"role": "user", "content": text}]), KEY)
    _, raw = get(emu.url + "/_emulator/requests?since=1")
    items = json.loads(raw)["requests"]
    assert [i["index"] for i in items] == [1, 2]
    _, raw = get(emu.url + "/_emulator/requests?since=")
    assert len(json.loads(raw)["requests"]) == 3


def test_clock_offset_then_advance(emu):
    status, data = control(emu, "clock", {"offset": 100, "advance": 20})
    assert status == 200 and data["offset"] == 120 == emu.offset
    _, data = control(emu, "clock")  # an empty body changes nothing
    assert data["offset"] == 120


def test_clear_forgets_requests_and_faults_and_the_cache_only_when_asked(emu):
    long = "word " * 3000
    body = msg_body([{"role": "user", "content": [{"type": "text", "text": long, "cache_control": {"type": "ephemeral"}}]}])
    post(emu.url + "/v1/messages", body, KEY)
    control(emu, "fault", {"kind": "529", "count": 5})
    assert control(emu, "clear", {}) == (200, {"ok": True})
    assert emu.received == []
    status, _, raw = post(emu.url + "/v1/messages", body, KEY)
    assert status == 200 and json.loads(raw)["usage"]["cache_read_input_tokens"] > 0  # faults gone, cache kept
    control(emu, "clear", {"cache": True})
    _, _, raw = post(emu.url + "/v1/messages", body, KEY)
    assert json.loads(raw)["usage"]["cache_read_input_tokens"] == 0


@pytest.mark.parametrize("spec", [{"count": 1}, {"kind": "nonsense"}, {"kind": "529", "count": 1, "bogus": 1}, [1]])
def test_a_bad_fault_is_a_400_naming_the_problem(emu, spec):
    status, data = control(emu, "fault", spec)
    assert status == 400 and data["ok"] is False and data["error"]


def test_a_fault_is_answered_and_reported(emu):
    status, data = control(emu, "fault", {"kind": "429", "count": 1})
    assert status == 200 and data["fault"]["kind"] == "429"
    assert post(emu.url + "/v1/messages", msg_body(), KEY)[0] == 429
    assert post(emu.url + "/v1/messages", msg_body(), KEY)[0] == 200


def test_script_by_name_with_args_and_errors(emu):
    assert control(emu, "script", {"name": "text", "args": {"text": "Scripted."}}) == (200, {"ok": True})
    _, _, raw = post(emu.url + "/v1/messages", msg_body(), KEY)
    assert json.loads(raw)["content"] == [{"type": "text", "text": "Scripted."}]
    status, data = control(emu, "script", {"name": "nope"})
    assert status == 400 and "unknown script 'nope'" in data["error"]
    status, data = control(emu, "script", {"name": "text", "args": {"colour": "red"}})
    assert status == 400 and "colour" in data["error"]


def test_a_shared_clock_moves_the_proxy_too(tmp_path, monkeypatch, isolated_home):
    """``scalpel emulator`` shares its clock (issue 26): moving it past the TTL reaches the proxy,
    whose next request of the conversation is at its ``ttl-expired`` break."""
    import sqlite3
    import time

    from scalpel_desktop import clock
    from scalpel_desktop.config import Config
    from scalpel_desktop.paths import dirs
    from scalpel_desktop.runtime import Runtime

    monkeypatch.setenv("SCALPEL_TEST_CLOCK_FILE", str(tmp_path / "clock"))
    with running_emulator(shared_clock=True) as shared:
        rt = Runtime(Config.load(), {"anthropic_upstream": shared.url}, port=0).start()
        try:
            proxy = f"http://127.0.0.1:{rt.port}"
            history = [{"role": "user", "content": [{"type": "text", "text": "word " * 3000,
                                                       "cache_control": {"type": "ephemeral"}}]}]
            body = msg_body(history)
            assert post(proxy + "/v1/messages", body, KEY)[0] == 200
            before = clock.now()
            status, data = control(shared, "clock", {"advance": 400})
            assert status == 200 and data["shared_offset"] == pytest.approx(400) and data["offset"] == 0
            assert clock.now() - before >= 400  # this process's clock (the proxy's) moved
            history += [{"role": "assistant", "content": "ok"}, {"role": "user", "content": "again"}]
            assert post(proxy + "/v1/messages", msg_body(history), KEY)[0] == 200
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                conn = sqlite3.connect(dirs().database)
                rows = conn.execute("SELECT figures FROM requests ORDER BY id").fetchall()
                conn.close()
                if len(rows) >= 2:
                    break
                time.sleep(0.05)
            assert json.loads(rows[1][0])["break_reason"] == "ttl-expired"
        finally:
            rt.stop()
