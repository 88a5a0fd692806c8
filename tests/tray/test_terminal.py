"""Finding a terminal emulator for the dashboard."""

from __future__ import annotations

import sys

import pytest

from scalpel_desktop.tray import terminal

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux terminal search order")


def test_terminal_env_wins():
    argv = terminal.terminal_argv(["scalpel", "tui"], env={"TERMINAL": "foot"}, which=lambda n: f"/usr/bin/{n}")
    assert argv == ["foot", "-e", "scalpel", "tui"]


def test_search_order_and_argument_style():
    have = {"xterm", "konsole"}
    argv = terminal.terminal_argv(["s", "tui"], env={}, which=lambda n: f"/bin/{n}" if n in have else None)
    assert argv == ["/bin/konsole", "-e", "s", "tui"]
    have = {"gnome-terminal"}
    assert terminal.terminal_argv(["s"], env={}, which=lambda n: f"/bin/{n}" if n in have else None) == ["/bin/gnome-terminal", "--", "s"]


def test_none_found_says_so(monkeypatch):
    monkeypatch.setattr(terminal, "terminal_argv", lambda command: None)
    msg = terminal.open_tui()
    assert "no terminal emulator found" in msg and "scalpel tui" in msg


def test_tui_command_runs_scalpel_tui():
    assert terminal.tui_command()[-3:] == ["-m", "scalpel_desktop", "tui"]
