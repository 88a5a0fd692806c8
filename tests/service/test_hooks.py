"""Claude Code hooks: install/uninstall round trip, and the hooks run as Claude Code runs them.

The inputs are captured from Claude Code 2.1.332 (tests/service/fixtures/README.md);
their paths are rewritten to this test's HOME, where the files really exist. What each hook
decides, called directly, is in tests/service/test_hook_logic.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from scalpel_desktop.service import hook_logic, hooks
from scalpel_desktop.service.settings_file import SettingsError, settings_path
from tests.service.hook_inputs import fixture


def run_hook(event: str, payload, *, raw: bytes | None = None) -> subprocess.CompletedProcess:
    data = raw if raw is not None else json.dumps(payload).encode()
    return subprocess.run([sys.executable, "-I", "-m", "scalpel_desktop.hooks_entry", event], input=data,
                          capture_output=True, timeout=30, env=dict(os.environ))


# -- install / uninstall ---------------------------------------------------------
USER_SETTINGS = (b'{\n  "hooks": {\n    "PreToolUse": [\n      {"matcher": "Bash", "hooks": [{"type": "command", '
                 b'"command": "my-guard"}]}\n    ]\n  },\n  "statusLine": {"type": "command", "command": "my-line"}\n}\n')


def test_hooks_and_statusline_round_trip_byte_for_byte(isolated_home):
    path = settings_path()
    path.parent.mkdir(parents=True)
    path.write_bytes(USER_SETTINGS)
    hooks.install_hooks()
    hooks.install_statusline()
    doc = json.loads(path.read_bytes())
    assert doc["hooks"]["PreToolUse"][0]["hooks"][0]["command"] == "my-guard"
    st = hooks.status()
    assert st.all_installed and st.statusline and not st.foreign_statusline
    assert "scalpel_desktop.hooks_entry statusline" in doc["statusLine"]["command"]
    hooks.install_hooks()  # idempotent: still one entry per event
    assert sum(hooks._is_ours(h) for g in json.loads(path.read_bytes())["hooks"]["PreToolUse"] for h in g["hooks"]) == 1
    hooks.uninstall_hooks()
    hooks.uninstall_statusline()
    assert path.read_bytes() == USER_SETTINGS
    st = hooks.status()
    assert not any(st.installed.values()) and st.foreign_statusline


def test_uninstall_order_does_not_matter_and_missing_file_comes_back_missing(isolated_home):
    hooks.install_statusline()
    hooks.install_hooks()
    hooks.uninstall_statusline()
    assert hooks.status().all_installed
    hooks.uninstall_hooks()
    assert not settings_path().exists()


def test_install_refuses_an_unparsable_file(isolated_home):
    path = settings_path()
    path.parent.mkdir(parents=True)
    path.write_bytes(b'{"hooks": }')
    with pytest.raises(SettingsError, match="settings.json"):
        hooks.install_hooks()
    assert path.read_bytes() == b'{"hooks": }'


def test_cli_hooks_install_status_uninstall(isolated_home, capsys):
    from scalpel_desktop.cli import main

    assert main(["hooks", "install"]) == 0
    assert main(["hooks", "status", "--json"]) == 0
    out = capsys.readouterr().out
    assert json.loads(out[out.index("{"):])["all_installed"] is True
    assert main(["hooks", "uninstall"]) == 0
    assert not settings_path().exists()


def test_installed_command_really_runs_the_hook(isolated_home, project):
    """The command string written to settings.json, run through a shell as Claude Code does."""
    hooks.install_hooks()
    cmd = json.loads(settings_path().read_bytes())["hooks"]["PostToolUse"][0]["hooks"][0]["command"]
    payload = fixture("hook-post-read.json", isolated_home)
    cp = subprocess.run(cmd, shell=True, input=json.dumps(payload).encode(), capture_output=True, timeout=30, cwd=project)
    assert cp.returncode == 0 and cp.stdout == b""
    assert hook_logic._load(payload["session_id"])["agents"]["main"][str(project / "notes.txt")]["sha256"]


# -- the hooks as Claude Code runs them (hooks_entry in a child process) ------------------
def test_full_reread_of_unchanged_file_is_denied_when_the_log_shows_no_cut(isolated_home, project, ledger):
    hook_logic.post_tool_use(fixture("hook-post-read.json", isolated_home))
    cp = run_hook("pre-tool-use", fixture("hook-pre-read.json", isolated_home))
    assert cp.returncode == 0
    out = json.loads(cp.stdout)["hookSpecificOutput"]
    assert out["hookEventName"] == "PreToolUse" and out["permissionDecision"] == "deny"
    assert "notes.txt" in out["permissionDecisionReason"] and "offset" in out["permissionDecisionReason"]


@pytest.mark.parametrize("raw", [b"", b"not json", b"[1,2]", b'{"tool_name": "Read", "tool_input": 5}', b"\xff\xfe"])
@pytest.mark.parametrize("event", ["pre-tool-use", "post-tool-use", "session-start", "user-prompt-submit", "statusline",
                                   "bogus"])
def test_every_hook_exits_0_silently_on_garbage(isolated_home, event, raw):
    cp = run_hook(event, None, raw=raw)
    assert cp.returncode == 0 and cp.stderr == b""
    if event != "statusline":
        assert cp.stdout == b""


def test_unreadable_state_dir_is_silent(isolated_home, project):
    hook_logic.state_dir().parent.mkdir(parents=True, exist_ok=True)
    hook_logic.state_dir().write_text("a file where the dir should be")
    cp = run_hook("post-tool-use", fixture("hook-post-read.json", isolated_home))
    assert cp.returncode == 0 and cp.stdout == b"" and cp.stderr == b""


def test_session_start_starts_the_service_when_autopilot_is_on(isolated_home, process_service):
    from scalpel_desktop.service import autopilot
    from scalpel_desktop.service.probe import health
    from scalpel_desktop.service.process_backend import ProcessBackend

    port = process_service
    autopilot.on(timeout=30)
    ProcessBackend().stop()  # the proxy died; the "service" is still installed
    assert health(port) is None
    cp = run_hook("session-start", fixture("hook-session-start.json", isolated_home))
    assert cp.returncode == 0 and cp.stdout == b""
    assert health(port) is not None  # the hook waited for it: back before Claude Code's first request
    autopilot.off()


def test_session_start_does_nothing_when_autopilot_is_off(isolated_home):
    from scalpel_desktop.service import session_guard

    assert session_guard.start_proxy_if_needed() == "autopilot off"
