"""Autopilot with a real `scalpel start` process standing in for the login service."""

from __future__ import annotations

import json
import socket
import threading
import time

import pytest

from scalpel_desktop.service import autopilot
from scalpel_desktop.service.autopilot import AutopilotError
from scalpel_desktop.service.probe import health
from scalpel_desktop.service.process_backend import ProcessBackend
from scalpel_desktop.service.settings_file import SettingsError, settings_path

USER_SETTINGS = b'{\n  "model": "sonnet",\n  "env": {\n    "DISABLE_TELEMETRY": "1"\n  }\n}\n'


def _write_settings(data: bytes):
    p = settings_path()
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(data)
    return p


def test_on_off_round_trip_restores_the_file_byte_for_byte(process_service):
    port = process_service
    path = _write_settings(USER_SETTINGS)
    st = autopilot.on(timeout=30)
    assert st.enabled and st.proxy_answering and st.settings_point_here
    assert json.loads(path.read_bytes())["env"]["ANTHROPIC_BASE_URL"] == f"http://127.0.0.1:{port}"
    assert json.loads(path.read_bytes())["env"]["DISABLE_TELEMETRY"] == "1"
    assert json.loads(path.read_bytes())["env"]["ENABLE_TOOL_SEARCH"] == "true"
    pid = ProcessBackend().pid()
    assert pid is not None and health(port)["pid"] == pid
    since = autopilot.route_since()  # since when the proxy is Claude Code's only way out (surgery/resume.py)
    assert since is not None and abs(since - time.time()) < 60
    st = autopilot.off()
    assert autopilot.route_since() is None
    assert not st.enabled and not st.service_installed
    assert path.read_bytes() == USER_SETTINGS
    assert health(port) is None
    assert ProcessBackend().pid() is None


def test_settings_are_written_only_once_the_proxy_answers(process_service):
    port = process_service
    path = _write_settings(USER_SETTINGS)
    seen: list[bool] = []
    stop = threading.Event()

    def watch():
        # `stopping` is read before the file, so the last look comes after on() returned: a
        # watcher that slept through the write (a loaded CI machine) still sees it once
        while True:
            stopping = stop.is_set()
            if path.read_bytes() != USER_SETTINGS:
                seen.append(health(port, timeout=10) is not None)
                return
            if stopping:
                return
            time.sleep(0.002)  # leave the GIL to on()
    t = threading.Thread(target=watch)
    t.start()
    try:
        autopilot.on(timeout=30)
    finally:
        stop.set()
        t.join()
    assert seen == [True]
    autopilot.off()


def test_settings_untouched_when_the_proxy_cannot_start(process_service):
    port = process_service
    path = _write_settings(USER_SETTINGS)
    blocker = socket.socket()
    blocker.bind(("127.0.0.1", port))
    blocker.listen(1)
    try:
        with pytest.raises(AutopilotError, match="untouched"):
            autopilot.on(timeout=20)
    finally:
        blocker.close()
    assert path.read_bytes() == USER_SETTINGS
    assert not ProcessBackend().enabled() and ProcessBackend().pid() is None
    assert not autopilot.is_on()


def test_settings_untouched_when_health_check_times_out(process_service):
    path = _write_settings(USER_SETTINGS)
    with pytest.raises(AutopilotError, match="health check"):
        autopilot.on(timeout=0.01)
    assert path.read_bytes() == USER_SETTINGS
    assert ProcessBackend().pid() is None


def test_unparsable_settings_refused_before_anything_starts(process_service):
    path = _write_settings(b'{"env": {"A": 1,}}')
    with pytest.raises(SettingsError, match=str(path).replace("/", ".")):
        autopilot.on(timeout=5)
    assert path.read_bytes() == b'{"env": {"A": 1,}}'
    assert not ProcessBackend().enabled()


def test_gateway_becomes_upstream_and_comes_back(process_service):
    from scalpel_desktop.config import Config

    port = process_service
    original = b'{"env": {"ANTHROPIC_BASE_URL": "https://llm-gateway.example.com/anthropic"}}'
    path = _write_settings(original)
    st = autopilot.on(timeout=30)
    assert st.gateway == "https://llm-gateway.example.com/anthropic"
    assert Config.load()["anthropic_upstream"] == "https://llm-gateway.example.com/anthropic"
    from scalpel_desktop.control_client import ControlClient

    assert ControlClient.discover().status()["anthropic_upstream"] == "https://llm-gateway.example.com/anthropic"
    assert json.loads(path.read_bytes())["env"]["ANTHROPIC_BASE_URL"] == f"http://127.0.0.1:{port}"
    autopilot.off()
    assert path.read_bytes() == original
    assert Config.load()["anthropic_upstream"] == "https://api.anthropic.com"


def test_on_refuses_when_another_proxy_holds_the_port(process_service):
    from scalpel_desktop.runtime import Runtime

    path = _write_settings(USER_SETTINGS)
    rt = Runtime(port=process_service).start()
    try:
        with pytest.raises(AutopilotError, match="already runs"):
            autopilot.on(timeout=5)
    finally:
        rt.stop()
    assert path.read_bytes() == USER_SETTINGS


def test_cli_exit_status_1_and_message_on_bad_settings(process_service, capsys):
    from scalpel_desktop.cli import main

    path = _write_settings(b"{oops")
    assert main(["autopilot", "on", "--timeout", "5"]) == 1
    err = capsys.readouterr().err
    assert str(path) in err and "does not parse" in err


def test_off_refuses_unparsable_settings_and_keeps_the_service(process_service):
    port = process_service
    path = _write_settings(USER_SETTINGS)
    autopilot.on(timeout=30)
    path.write_bytes(b"{broken")
    with pytest.raises(SettingsError):
        autopilot.off()
    assert health(port) is not None  # still served: never a dead port
    path.write_bytes(json.dumps({"env": {"ANTHROPIC_BASE_URL": f"http://127.0.0.1:{port}"}}).encode())
    autopilot.off()
    assert "env" not in json.loads(path.read_bytes())


def test_a_users_own_tool_search_choice_is_kept(process_service):
    mine = b'{"env": {"ENABLE_TOOL_SEARCH": "false"}}'
    path = _write_settings(mine)
    autopilot.on(timeout=30)
    assert json.loads(path.read_bytes())["env"]["ENABLE_TOOL_SEARCH"] == "false"
    autopilot.off()
    assert path.read_bytes() == mine


def test_route_since_reads_the_state_and_an_older_state_counts_from_its_file(isolated_home):
    from scalpel_desktop.config import write_json_atomic
    from scalpel_desktop.paths import dirs

    path = dirs().state / "autopilot.json"
    assert autopilot.route_since() is None
    write_json_atomic(path, {"enabled": True, "enabled_at": 1234.5})
    assert autopilot.route_since() == 1234.5
    write_json_atomic(path, {"enabled": True})  # written by a version that did not record the time
    assert autopilot.route_since() == path.stat().st_mtime
    write_json_atomic(path, {"enabled": False, "enabled_at": 1.0})  # a rolled-back `on`
    assert autopilot.route_since() is None
