"""``scalpel hooks install|uninstall|status`` and ``scalpel hook EVENT`` through the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from scalpel_desktop.cli import main
from scalpel_desktop.service.settings_file import settings_path
from tests.support import REPO, run_cli as run

FIXTURES = REPO / "tests" / "service" / "fixtures"
MINE = b'{\n  "model": "opus",\n  "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "g"}]}]}\n}'
EVENTS = ("PreToolUse", "PostToolUse", "SessionStart", "UserPromptSubmit", "Notification", "SessionEnd")


def test_install_status_uninstall_text_and_json(capsys):
    path = settings_path()
    path.parent.mkdir(parents=True)
    path.write_bytes(MINE)
    code, out, _ = run(capsys, "hooks", "install")
    assert code == 0
    assert out.splitlines() == ["hooks installed in ~/.claude/settings.json"] + [
        f"  {e:<16} installed" for e in EVENTS]
    assert json.loads(path.read_bytes())["hooks"]["PreToolUse"][0]["hooks"][0]["command"] == "g"  # the user's kept
    code, out, _ = run(capsys, "hooks", "status", "--json")
    st = json.loads(out)
    assert code == 0 and st["installed"] == dict.fromkeys(EVENTS, True) and st["all_installed"] is True
    code, out, _ = run(capsys, "hooks", "uninstall")
    assert code == 0 and out.splitlines()[0] == "hooks removed from ~/.claude/settings.json"
    assert out.count("not installed") == len(EVENTS)
    assert path.read_bytes() == MINE


def test_uninstall_with_nothing_installed_says_so_and_creates_no_file(capsys):
    """Regression: it printed "hooks removed" and wrote a settings.json holding ``{}``."""
    code, out, _ = run(capsys, "hooks", "uninstall")
    assert code == 0 and out.splitlines()[0] == "no scalpel hooks in ~/.claude/settings.json; nothing changed"
    assert not settings_path().exists()
    code, out, _ = run(capsys, "hooks", "status", "--json")
    assert json.loads(out)["all_installed"] is False and not settings_path().exists()


def test_an_unparsable_settings_file_is_refused_and_reported(capsys):
    path = settings_path()
    path.parent.mkdir(parents=True)
    path.write_bytes(b'{"hooks": ')
    for action in ("install", "uninstall"):
        code, out, err = run(capsys, "hooks", action)
        assert code == 1 and out == ""
        assert err.startswith("scalpel: ") and str(path) in err and "does not parse" in err
    assert path.read_bytes() == b'{"hooks": '
    code, out, _ = run(capsys, "hooks", "status")
    assert code == 0 and "problem:" in out and "does not parse" in out  # status still answers


def test_bad_arguments_exit_2(capsys):
    for argv, message in ((["hooks"], "required"), (["hooks", "wipe"], "invalid choice: 'wipe'"),
                          (["hook", "pre-commit"], "invalid choice: 'pre-commit'")):
        with pytest.raises(SystemExit) as e:
            main(argv)
        assert e.value.code == 2 and message in capsys.readouterr().err


def hook(event: str, data: bytes, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "scalpel_desktop", "hook", event], input=data, capture_output=True,
                          timeout=60, env=dict(os.environ), cwd=cwd or REPO)


def fixture(name: str, home: Path) -> bytes:
    return (FIXTURES / name).read_text().replace("/home/user", str(home)).encode()


def test_hook_denies_a_full_reread_of_an_unchanged_file(isolated_home):
    from scalpel_desktop.store.db import connect

    project = isolated_home / "project"
    project.mkdir()
    post = json.loads(fixture("hook-post-read.json", isolated_home))
    (project / "notes.txt").write_text(post["tool_response"]["file"]["content"])
    connect().close()  # a surgery log that shows no cut of the earlier read
    cp = hook("post-tool-use", fixture("hook-post-read.json", isolated_home))
    assert (cp.returncode, cp.stdout, cp.stderr) == (0, b"", b"")
    cp = hook("pre-tool-use", fixture("hook-pre-read.json", isolated_home))
    assert cp.returncode == 0, cp.stderr
    decision = json.loads(cp.stdout)["hookSpecificOutput"]
    assert decision["permissionDecision"] == "deny" and "notes.txt" in decision["permissionDecisionReason"]


@pytest.mark.parametrize("raw", [b"", b"{", b"[1]", b"\xff"])
def test_hook_exits_0_silently_on_garbage(raw):
    cp = hook("pre-tool-use", raw)
    assert (cp.returncode, cp.stdout, cp.stderr) == (0, b"", b"")
