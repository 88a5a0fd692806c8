"""The dispatcher against a real Runtime (the tray's own proxy); never raises."""

from __future__ import annotations

import json
import subprocess
import sys

from scalpel_desktop.tray.dispatcher import Dispatcher


def _status_json() -> dict:
    cp = subprocess.run([sys.executable, "-m", "scalpel_desktop", "status", "--json"], capture_output=True, text=True, timeout=60)
    return json.loads(cp.stdout)


def test_commands_change_the_running_proxy(own_runtime_link):
    link = own_runtime_link
    link.start_own()
    d = Dispatcher(link, on_quit=lambda: None)
    d.refresh()
    assert d.state.running and d.state.icon == "active" and not d.state.paused
    assert d.dispatch("toggle_pause")
    assert d.state.paused and d.state.icon == "paused"
    assert _status_json()["paused"] is True  # seen from another process
    assert d.dispatch("tier:1") and d.dispatch("policy:payback") and d.dispatch("toggle_tool_filter")
    st = _status_json()
    assert (st["tier"], st["policy"], st["tool_filter"]) == (1, "payback", True)
    assert d.dispatch("toggle_pause") and _status_json()["paused"] is False


def test_errors_go_to_the_status_line_not_up(own_runtime_link):
    link = own_runtime_link
    d = Dispatcher(link, on_quit=lambda: None)
    assert not d.dispatch("toggle_pause")  # no proxy running
    assert "no proxy is running" in d.state.status_line()
    assert not d.dispatch("no-such-command")
    assert "unknown command" in d.state.message

    def broken_dashboard():
        raise OSError("terminal exploded")

    d2 = Dispatcher(link, on_quit=lambda: None, open_dashboard=broken_dashboard)
    assert not d2.dispatch("open_dashboard")
    assert "terminal exploded" in d2.state.status_line()


def test_dashboard_problem_is_reported(own_runtime_link):
    d = Dispatcher(own_runtime_link, on_quit=lambda: None, open_dashboard=lambda: "no terminal emulator found")
    assert not d.dispatch("open_dashboard")
    assert d.state.message.endswith("no terminal emulator found")


def test_open_data_folder_and_quit_call_their_handlers(own_runtime_link):
    calls = []
    d = Dispatcher(own_runtime_link, on_quit=lambda: calls.append("quit"), open_data_folder=lambda: calls.append("folder"))
    assert d.dispatch("open_data_folder") and d.dispatch("quit")
    assert calls == ["folder", "quit"]


def test_a_ledger_the_proxy_cannot_use_shows_on_the_icon_menu_and_tooltip(own_runtime_link):
    """A folder where the ledger file should be (a root test run cannot make a folder read-only)."""
    from scalpel_desktop.paths import dirs

    dirs().database.mkdir(parents=True)
    own_runtime_link.start_own()
    d = Dispatcher(own_runtime_link, on_quit=lambda: None)
    s = d.refresh()
    assert s.running and s.icon == "error"
    labels = [label for label, _ in s.problems]
    assert {"ledger unreadable", "recording off", "surgery off"} <= set(labels)
    assert s.saved_tokens_today is None and s.requests_today is None  # unknown, not 0
    assert "saved unknown today, unknown requests" in s.tooltip() and "DEGRADED: " in s.tooltip()
    assert s.problems_line().startswith("Degraded: ")
