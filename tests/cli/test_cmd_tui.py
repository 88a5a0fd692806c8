"""``scalpel tui``: help text, and a clear refusal when the terminal is not interactive."""

from __future__ import annotations

import subprocess
import sys

from scalpel_desktop.cli import main


def test_help_names_the_screens_and_keys(capsys):
    try:
        main(["tui", "--help"])
    except SystemExit as e:
        assert e.code == 0
    out = " ".join(capsys.readouterr().out.split())
    from scalpel_desktop.tui.app import PANES

    for word in (*(label.lower().rstrip("s") for _, label, _ in PANES), f"1-{len(PANES)}", "q quits"):
        assert word in out, word


def test_not_a_terminal_is_refused_with_a_message():
    # A real process with stdin and stdout not on a terminal (as from cron or a pipe).
    proc = subprocess.run([sys.executable, "-m", "scalpel_desktop", "tui"], stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert "scalpel: the dashboard needs an interactive terminal" in proc.stderr
    assert proc.stdout == ""


def test_bad_refresh_is_refused(capsys, monkeypatch):
    from scalpel_desktop.cli import cmd_tui

    monkeypatch.setattr(cmd_tui, "interactive", lambda: True)
    assert main(["tui", "--refresh", "0"]) == 1
    assert "--refresh 0.0: must be a number of seconds > 0" in capsys.readouterr().err
