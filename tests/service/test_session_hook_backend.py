"""Autopilot without a systemd user bus: a clear way forward, and that way (the SessionStart hook) working."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from scalpel_desktop.cli import main
from scalpel_desktop.control_client import ControlClient, pid_alive
from scalpel_desktop.service import autopilot, hooks
from scalpel_desktop.service.autopilot import AutopilotError
from scalpel_desktop.service.probe import base_url, health
from scalpel_desktop.service.session_hook_backend import SessionHookBackend
from scalpel_desktop.service.settings_file import settings_path
from scalpel_desktop.service.systemd import SystemdBackend
from tests.service.test_hooks import fixture
from tests.support import free_port

ORIGINAL = b'{\n  "model": "sonnet"\n}\n'


@pytest.fixture
def port(isolated_home):
    from scalpel_desktop.paths import dirs

    p = free_port()
    dirs().config.mkdir(parents=True, exist_ok=True)
    dirs().config_file.write_text(json.dumps({"port": p}))
    path = settings_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(ORIGINAL)
    yield p
    if SessionHookBackend().enabled():
        SessionHookBackend().disable()
    assert health(p) is None


def test_no_user_bus_rolls_back_and_names_the_session_hook_way(port):
    def no_bus(argv):
        return subprocess.CompletedProcess(argv, 1, "", "Failed to connect to bus: No medium found")

    with pytest.raises(AutopilotError) as e:
        autopilot.on(timeout=5, backend=SystemdBackend(runner=no_bus))
    message = str(e.value)
    assert "no service manager can run the proxy at login here" in message and "No medium found" in message
    assert "left untouched" in message and "`scalpel autopilot on --session-hook`" in message
    assert settings_path().read_bytes() == ORIGINAL and not autopilot.is_on()


def test_a_plain_systemctl_failure_does_not_offer_it(port):
    def broken(argv):
        return subprocess.CompletedProcess(argv, 1, "", "Unit file is masked.")

    with pytest.raises(AutopilotError) as e:
        autopilot.on(timeout=5, backend=SystemdBackend(runner=broken))
    assert "--session-hook" not in str(e.value) and "masked" in str(e.value)


def _session_start(home) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_BASE_URL"}
    return subprocess.run([sys.executable, "-I", "-m", "scalpel_desktop.hooks_entry", "session-start"],
                          input=json.dumps(fixture("hook-session-start.json", home)).encode(),
                          capture_output=True, timeout=60, env=env)


def test_session_hook_autopilot_round_trip(port, isolated_home, capsys):
    assert main(["autopilot", "on", "--session-hook"]) == 0
    assert "session-hook" in capsys.readouterr().out
    doc = json.loads(settings_path().read_bytes())
    assert doc["env"]["ANTHROPIC_BASE_URL"] == base_url(port)
    assert hooks.status().all_installed
    first = health(port)["pid"]

    client = ControlClient.discover()
    client.stop()  # the proxy ends (no service manager brings it back between sessions)
    deadline = time.monotonic() + 15
    while pid_alive(first) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert health(port) is None

    cp = _session_start(isolated_home)  # a new Claude Code session begins
    assert cp.returncode == 0 and cp.stdout == b"", cp.stdout
    assert health(port) is not None and health(port)["pid"] != first

    assert main(["autopilot", "off"]) == 0
    assert settings_path().read_bytes() == ORIGINAL  # hooks it installed are gone too
    assert health(port) is None and not SessionHookBackend().enabled()
