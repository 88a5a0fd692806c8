"""``scalpel statusline`` (the line on stdin's session JSON) and its --install / --uninstall."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from scalpel_desktop.cli import main
from scalpel_desktop.service.hooks import STATUSLINE_REFRESH_S
from scalpel_desktop.service.settings_file import settings_path
from tests.support import REPO, run_cli as run

FIXTURES = REPO / "tests" / "service" / "fixtures"
MINE = b'{"statusLine": {"type": "command", "command": "my-line"}}'


def statusline(data: bytes) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "scalpel_desktop", "statusline"], input=data, capture_output=True,
                          timeout=60, env=dict(os.environ), cwd=REPO)


def test_prints_the_context_and_cache_share_from_claude_codes_input():
    cp = statusline((FIXTURES / "statusline-after-turns.json").read_bytes())
    assert cp.returncode == 0 and cp.stderr == b""
    # 103 written + 15,241 read of a 1M window; no proxy in this HOME: not routed
    assert cp.stdout.decode() == "ctx 15.3k/1M (2%) · cache 99% · scalpel: not routed\n"


@pytest.mark.parametrize("raw", [b"", b"{", b"null", b"\xff\xfe"])
def test_never_fails_loudly_on_garbage(raw):
    cp = statusline(raw)
    assert cp.returncode == 0 and cp.stderr == b"" and cp.stdout.count(b"\n") <= 1


def test_install_then_uninstall_restores_the_users_own_line(capsys):
    path = settings_path()
    path.parent.mkdir(parents=True)
    path.write_bytes(MINE)
    code, out, _ = run(capsys, "statusline", "--install")
    assert (code, out) == (0, "statusLine set to scalpel in ~/.claude/settings.json\n")
    line = json.loads(path.read_bytes())["statusLine"]
    assert "scalpel_desktop" in line["command"] and line["command"].endswith("statusline")
    # re-run while the session idles, so a dead proxy shows (and comes back) without waiting for a message
    assert line["refreshInterval"] == STATUSLINE_REFRESH_S > 0
    code, out, _ = run(capsys, "statusline", "--uninstall")
    assert (code, out) == (0, "statusLine restored in ~/.claude/settings.json\n")
    assert path.read_bytes() == MINE


def test_uninstall_when_it_was_never_installed_changes_nothing(capsys):
    code, out, _ = run(capsys, "statusline", "--uninstall")
    assert (code, out) == (0, "scalpel's statusLine is not set in ~/.claude/settings.json; nothing changed\n")
    assert not settings_path().exists()


def test_an_unparsable_settings_file_is_refused_and_left_alone(capsys):
    path = settings_path()
    path.parent.mkdir(parents=True)
    path.write_bytes(b'{"statusLine": ')
    code, out, err = run(capsys, "statusline", "--install")
    assert code == 1 and out == "" and str(path) in err and "does not parse" in err
    assert path.read_bytes() == b'{"statusLine": '


def test_install_and_uninstall_together_is_refused(capsys):
    with pytest.raises(SystemExit) as e:
        main(["statusline", "--install", "--uninstall"])
    assert e.value.code == 2 and "not allowed with argument" in capsys.readouterr().err
