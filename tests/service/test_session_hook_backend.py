"""Autopilot without a systemd user bus: a clear way forward, and that way (the hooks as the only watchdog) working."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from scalpel_desktop.cli import main
from scalpel_desktop.control_client import ControlClient, pid_alive
from scalpel_desktop.service import autopilot, hooks
from scalpel_desktop.service.autopilot import AutopilotError
from scalpel_desktop.service.probe import base_url, health, wait_healthy
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


def _run_hook(home, event: str, fixture_name: str | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_BASE_URL"}
    payload = json.dumps(fixture(fixture_name, home)).encode() if fixture_name else b"{}"
    return subprocess.run([sys.executable, "-I", "-m", "scalpel_desktop.hooks_entry", event], input=payload,
                          capture_output=True, timeout=60, env=env)


def _kill_9(port: int) -> int:
    """kill -9 the proxy answering on ``port`` (one this test started); its pid, once the port refuses."""
    pid = health(port)["pid"]
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 15
    while health(port, timeout=0.2) is not None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert health(port) is None
    return pid


def test_with_no_service_manager_the_next_prompt_brings_a_killed_proxy_back(port, isolated_home):
    """``--session-hook``: no service restarts a crashed proxy; the prompt's hook does, before the request."""
    assert main(["autopilot", "on", "--session-hook"]) == 0
    assert hooks.status().installed["UserPromptSubmit"]
    first = _kill_9(port)
    cp = _run_hook(isolated_home, "user-prompt-submit", "hook-user-prompt-submit.json")
    assert cp.returncode == 0 and cp.stdout == b"", cp.stdout  # nothing for the model's context
    assert health(port) is not None and health(port)["pid"] != first  # back before the hook returned


def test_the_statusline_says_scalpel_down_and_starts_it_without_waiting(port, isolated_home):
    assert main(["autopilot", "on", "--session-hook"]) == 0
    first = _kill_9(port)
    cp = _run_hook(isolated_home, "statusline", "statusline-after-turns.json")
    line = cp.stdout.decode()
    assert cp.returncode == 0 and line.startswith("scalpel down: restarting it (autopilot)"), line
    assert " · ctx " in line and "scalpel saved" not in line and line.count("\n") == 1
    back = wait_healthy(port, 30)
    assert back is not None and back["pid"] != first
    cp = _run_hook(isolated_home, "statusline", "statusline-after-turns.json")
    assert "scalpel down" not in cp.stdout.decode()


@pytest.mark.claude_cli
def test_real_claude_p_works_again_within_10_s_of_a_kill_9(port, isolated_home, tmp_path):
    """The issue's bar: under ``--session-hook`` autopilot, ``kill -9`` of the proxy, then the next
    ``claude -p`` answers (its SessionStart and UserPromptSubmit hooks start the proxy first)."""
    from tests.support.claude_cli import run_claude, upstream_emulator

    with upstream_emulator(tmp_path) as (emu, workdir):
        assert main(["autopilot", "on", "--session-hook"]) == 0
        first = _kill_9(port)
        t = time.monotonic()
        # settings.json's env (autopilot's base URL) wins over the dead one run_claude sets
        rc, result, out, err = run_claude("http://127.0.0.1:9", workdir, "hi", timeout=60)
        took = time.monotonic() - t
        assert rc == 0 and result and not result.get("is_error"), out[-2000:] + err[-2000:]
        assert took < 10, f"claude -p took {took:.1f} s after the kill"
        assert health(port)["pid"] != first and any(r.endpoint == "messages" for r in emu.received)
