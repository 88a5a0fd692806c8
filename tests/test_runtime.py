"""The runtime: one instance per user, token, runtime file, live settings, actions, crash restart."""

from __future__ import annotations

import json
import os
import stat
import time

import pytest

from scalpel_desktop.config import Config, ConfigError
from scalpel_desktop.control_client import ControlClient, ControlError, ProxyNotRunning
from scalpel_desktop.paths import dirs
from scalpel_desktop.runtime import AlreadyRunning, Runtime


@pytest.fixture
def runtime():
    rt = Runtime(Config.load(), {"anthropic_upstream": "http://127.0.0.1:9"}, port=0).start()
    yield rt
    rt.stop()


def test_start_writes_runtime_file_and_private_token(runtime):
    info = json.loads(dirs().runtime_file.read_text())
    assert info["pid"] == os.getpid() and info["port"] == runtime.port and info["version"]
    mode = stat.S_IMODE(dirs().token_file.stat().st_mode)
    assert mode == 0o600
    assert len(dirs().token_file.read_text().strip()) >= 32
    assert runtime.health() == {"ok": True, "version": info["version"], "pid": os.getpid(), "port": runtime.port}


def test_second_instance_is_refused_and_says_where(runtime):
    with pytest.raises(AlreadyRunning) as err:
        Runtime(Config.load(), port=0).start()
    assert err.value.port == runtime.port and err.value.pid == os.getpid()
    assert f"port {runtime.port}" in str(err.value)


def test_stop_cleans_up_and_allows_a_new_start():
    rt = Runtime(Config.load(), port=0).start()
    assert rt.stop(timeout=5)
    assert not dirs().runtime_file.exists()
    mark = dirs().state / "clean_stop.json"  # every row written: the next proxy may trust the ledger
    assert json.loads(mark.read_text())["pid"] == os.getpid()
    with pytest.raises(ProxyNotRunning):
        ControlClient.discover()
    rt2 = Runtime(Config.load(), port=0).start()
    try:
        assert rt2.running
        assert not mark.exists()  # taken at start: a crash of this one leaves none
        surgery = next(st for st in rt2._pipeline.stages if st.name == "surgery")
        assert surgery.economist.resumes.clean_stop_at is not None
    finally:
        rt2.stop()
    assert rt2.stop() is True  # idempotent


def test_status_snapshot_fields(runtime):
    st = runtime.status()
    for key in ("state", "running", "port", "pid", "uptime_s", "requests", "errors", "requests_today",
                "tokens_in", "tokens_out", "last_error", "paused", "tier", "policy", "tool_filter"):
        assert key in st, key
    assert st["state"] == "running" and st["requests"] == 0
    assert runtime._token not in json.dumps(st)


def test_settings_are_validated_applied_live_and_saved(runtime):
    with pytest.raises(ConfigError) as err:
        runtime.set_settings({"tier": 7, "paused": True})
    assert "tier" in str(err.value) and "7" in str(err.value)
    assert runtime.setting("paused") is False  # all or nothing
    runtime.set_settings({"paused": "true", "policy": "payback"})
    assert runtime.status()["state"] == "paused" and runtime.status()["policy"] == "payback"
    saved = json.loads(dirs().config_file.read_text())
    assert saved["paused"] is True and saved["policy"] == "payback"
    # an explicit change beats the start-up override, and is saved
    runtime.set_settings({"anthropic_upstream": "http://127.0.0.1:10"})
    assert runtime.setting("anthropic_upstream") == "http://127.0.0.1:10"


def test_control_client_round_trip_and_registered_action(runtime):
    seen = []
    runtime.register_action("echo", lambda payload: (seen.append(payload), {"ok": True, "got": payload})[1])
    client = ControlClient.discover()
    assert client.port == runtime.port and client.pid == os.getpid()
    assert client.health()["ok"] is True
    assert client.action("echo", {"x": 1}) == {"ok": True, "got": {"x": 1}}
    assert seen == [{"x": 1}]
    assert client.pause()["paused"] is True and runtime.setting("paused") is True
    assert client.status()["state"] == "paused"
    assert client.resume()["paused"] is False
    with pytest.raises(ControlError) as err:
        client.set_settings({"port": "not-a-port"})
    assert err.value.status == 400 and "port" in str(err.value)
    with pytest.raises(ControlError) as err:
        client.action("no-such-action")
    assert err.value.status == 404


def test_stop_through_the_control_api(runtime):
    ControlClient.discover().stop()
    assert runtime.wait(timeout=5)
    assert not runtime.running and not dirs().runtime_file.exists()


def test_crashed_proxy_restarts_on_the_same_port(runtime):
    port = runtime.port
    runtime._server.crash_for_test()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and runtime.restarts == 0:
        time.sleep(0.05)
    assert runtime.restarts == 1
    assert runtime.port == port and runtime.status()["state"] == "running"
    assert "stopped unexpectedly" in runtime.status()["last_crash"]
    assert ControlClient.discover().health()["ok"] is True


def test_a_corrupt_database_still_forwards_byte_for_byte(tmp_path):
    """SPEC 8: a ledger that cannot be used turns recording (and the features kept in
    it) off; the proxy keeps forwarding the client's own bytes."""
    import urllib.request

    from scalpel_desktop.config import Config
    from scalpel_desktop.emulator.testing import running_emulator
    from scalpel_desktop.paths import dirs
    from scalpel_desktop.runtime import Runtime

    dirs().database.parent.mkdir(parents=True, exist_ok=True)
    dirs().database.write_bytes(b"this is not a database" * 200)
    body = b'{"model":"claude-sonnet-4-5","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}'
    with running_emulator() as emu:
        rt = Runtime(Config.load(), {"anthropic_upstream": emu.url}, port=0).start()
        try:
            req = urllib.request.Request(f"http://127.0.0.1:{rt.port}/v1/messages", data=body, method="POST",
                                         headers={"x-api-key": "k", "content-type": "application/json",
                                                  "anthropic-version": "2023-06-01"})
            with urllib.request.urlopen(req, timeout=30) as resp:
                assert resp.status == 200
            assert emu.received[-1].body == body
            names = [getattr(s, "name", "") for s in rt._pipeline.stages]
            assert "surgery" not in names and "tool_filter" not in names
        finally:
            rt.stop()


def test_a_healthy_runtime_has_nothing_degraded_and_counts_today_from_zero(runtime):
    st = runtime.status()
    assert st["degraded"] == [] and st["today_error"] == ""
    assert st["requests_today"] == 0 and st["saved_tokens_today"] == 0  # no ledger row yet: a true 0
    assert st["surgery_active"] is True and st["tool_filter_active"] is False and st["recording"] is True
    runtime.set_settings({"paused": True})
    st = runtime.status()
    assert st["surgery_active"] is False
    assert [(d["code"], d["severity"]) for d in st["degraded"]] == [("surgery-off", "info")]


def test_a_ledger_that_cannot_be_used_is_said_by_the_status_not_only_the_log():
    """A folder where the ledger file should be: tests run as root, for whom `chmod a-w` on the data
    folder stops no write, while no one (root included) can open a folder as a SQLite file."""
    dirs().database.mkdir(parents=True)
    rt = Runtime(Config.load(), {"anthropic_upstream": "http://127.0.0.1:9", "tool_filter": True}, port=0).start()
    try:
        st = ControlClient.discover().status()  # what every frontend reads, over the control API
        assert st["recording"] is False and st["surgery_active"] is False and st["tool_filter_active"] is False
        assert st["tool_filter"] is True  # asked on: said as off, not as on
        assert (st["requests_today"], st["saved_tokens_today"], st["saved_usd_today"]) == (None, None, None)
        assert st["today_error"]
        by_code = {d["code"]: d for d in st["degraded"]}
        assert {"ledger-unreadable", "recording-off", "surgery-off", "tool-filter-off"} <= set(by_code)
        assert all(by_code[c]["severity"] == "fail" for c in by_code)
        assert "is a folder" in by_code["ledger-unreadable"]["fix"]
    finally:
        rt.stop()
