"""The SessionStart and UserPromptSubmit hooks never let a session go on against a dead base URL without a word.

Each path runs the real hook command (``python -I -m scalpel_desktop.hooks_entry
session-start``) with the test service backend standing in for the login service;
the last one runs the real Claude Code CLI.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import pytest

from scalpel_desktop.service import autopilot, hooks
from scalpel_desktop.service.probe import base_url, health
from scalpel_desktop.service.process_backend import ProcessBackend
from tests.service.test_hooks import fixture
from tests.support import free_port


def run_event(event: str, fixture_name: str, home, **env: str) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_BASE_URL"}
    full.update(env)
    return subprocess.run([sys.executable, "-I", "-m", "scalpel_desktop.hooks_entry", event],
                          input=json.dumps(fixture(fixture_name, home)).encode(),
                          capture_output=True, timeout=60, env=full)


def run_session_start(home, **env: str) -> subprocess.CompletedProcess:
    return run_event("session-start", "hook-session-start.json", home, **env)


def _message(cp: subprocess.CompletedProcess) -> str:
    assert cp.returncode == 0 and cp.stderr == b"", cp.stderr
    return json.loads(cp.stdout)["systemMessage"]


def test_a_dead_autopilot_proxy_is_back_before_the_hook_returns(isolated_home, process_service):
    port = process_service
    autopilot.on(timeout=30)
    ProcessBackend().stop()  # installed, not running (like `systemctl --user stop`)
    assert health(port) is None
    cp = run_session_start(isolated_home, ANTHROPIC_BASE_URL=base_url(port))
    assert cp.returncode == 0 and cp.stdout == b""
    assert health(port) is not None
    autopilot.off()


def test_a_proxy_that_cannot_come_back_is_reported_in_the_session(isolated_home, process_service):
    port = process_service
    autopilot.on(timeout=30)
    ProcessBackend().stop()
    blocker = socket.socket()
    blocker.bind(("127.0.0.1", port))  # bound, not listening: the proxy cannot bind, nothing answers
    try:
        message = _message(run_session_start(isolated_home, ANTHROPIC_BASE_URL=base_url(port)))
    finally:
        blocker.close()
    assert message.startswith(f"scalpel: nothing answers at {base_url(port)}")
    assert "could not bring the proxy back" in message and "`scalpel autopilot off`" in message
    autopilot.off()


def test_a_dead_loopback_base_url_without_autopilot_is_reported(isolated_home):
    url = f"http://127.0.0.1:{free_port()}"
    message = _message(run_session_start(isolated_home, ANTHROPIC_BASE_URL=url))
    assert message.startswith(f"scalpel: nothing answers at {url} (ANTHROPIC_BASE_URL)")
    assert "unset ANTHROPIC_BASE_URL" in message


def test_every_prompt_says_so_too_and_keeps_quiet_when_it_answers(isolated_home):
    """UserPromptSubmit runs the same check before each prompt: a message the user sees, never stdout
    text (which Claude Code would add to the model's context)."""
    url = f"http://127.0.0.1:{free_port()}"
    cp = run_event("user-prompt-submit", "hook-user-prompt-submit.json", isolated_home, ANTHROPIC_BASE_URL=url)
    assert _message(cp).startswith(f"scalpel: nothing answers at {url} (ANTHROPIC_BASE_URL)")
    with socket.socket() as gateway:
        gateway.bind(("127.0.0.1", 0))
        gateway.listen()
        cp = run_event("user-prompt-submit", "hook-user-prompt-submit.json", isolated_home,
                       ANTHROPIC_BASE_URL=f"http://127.0.0.1:{gateway.getsockname()[1]}")
    assert cp.returncode == 0 and cp.stdout == b""


def test_quiet_when_something_listens_or_the_url_is_not_local(isolated_home):
    with socket.socket() as gateway:
        gateway.bind(("127.0.0.1", 0))
        gateway.listen()
        cp = run_session_start(isolated_home, ANTHROPIC_BASE_URL=f"http://127.0.0.1:{gateway.getsockname()[1]}")
        assert cp.returncode == 0 and cp.stdout == b""
    cp = run_session_start(isolated_home, ANTHROPIC_BASE_URL="https://gateway.example.com")
    assert cp.returncode == 0 and cp.stdout == b""
    cp = run_session_start(isolated_home)  # no base URL, autopilot off: direct to the API
    assert cp.returncode == 0 and cp.stdout == b""


def _session_start_message_from_claude(workdir) -> str:
    """Run claude -p with stream-json and return SessionStart's systemMessage as Claude Code reports it.

    Against a dead base URL Claude Code retries for minutes, so it is stopped once the hook has answered."""
    from tests.support import claude_bin
    from tests.support.claude_cli import claude_env

    args = [claude_bin(), "-p", "hi", "--output-format", "stream-json", "--verbose", "--dangerously-skip-permissions"]
    proc = subprocess.Popen(args, cwd=str(workdir), env=claude_env("http://127.0.0.1:9"), stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    seen = []
    try:
        for line in proc.stdout:
            seen.append(line)
            event = json.loads(line) if line.startswith("{") else {}
            if event.get("subtype") == "hook_response" and event.get("hook_event") == "SessionStart":
                return json.loads(event["stdout"])["systemMessage"]
            if len(seen) > 200:
                break
    finally:
        proc.kill()
        proc.wait(30)
    raise AssertionError("no SessionStart hook response: " + "".join(seen)[-3000:])


@pytest.mark.claude_cli
def test_real_claude_code_session_starts_through_a_revived_proxy_or_shows_why(isolated_home, process_service, tmp_path):
    """Claude Code runs SessionStart before its first request: a proxy the hook brings back
    answers that request; one that cannot come back is named in the session's hook output."""
    from tests.support.claude_cli import run_claude, upstream_emulator

    port = process_service
    with upstream_emulator(tmp_path) as (emu, workdir):
        autopilot.on(timeout=30)
        hooks.install_hooks()
        ProcessBackend().stop()
        assert health(port) is None
        # Settings.json's env (written by autopilot) wins over the environment run_claude sets.
        rc, result, out, err = run_claude("http://127.0.0.1:9", workdir, "hi", timeout=120)
        assert rc == 0 and result and not result.get("is_error"), out[-2000:] + err[-2000:]
        assert any(r.endpoint == "messages" for r in emu.received)

        ProcessBackend().stop()
        blocker = socket.socket()
        blocker.bind(("127.0.0.1", port))
        try:
            shown = _session_start_message_from_claude(workdir)
        finally:
            blocker.close()
        assert "could not bring the proxy back" in shown and "`scalpel autopilot off`" in shown
        autopilot.off()
