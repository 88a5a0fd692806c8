"""tui/screens/tools.py: the inventory and the suggestions, and what space / f / the switch ask for.

Through a real proxy and the seeded ledger in tests/tui/test_app.py; here the
view alone in a bare app, given ``ToolsData`` built by hand, recording the
``ControlRequested`` messages it posts and the notifications it shows.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from textual.widgets import DataTable, Switch

from scalpel_desktop.tui.inventory import Suggestion, ToolRow, ToolsData
from scalpel_desktop.tui.messages import ControlRequested
from scalpel_desktop.tui.proxy import ProxyState
from scalpel_desktop.tui.screens.tools import ToolsView
from tests.tui.helpers import host, row_keys, row_text, settle, text_of

pytestmark = pytest.mark.anyio
TOOLS = [
    ToolRow("mcp__linear__create_issue", "mcp", 3_000, 4, 0, "mcp__linear", "removed by mcp__linear", 0, None),
    ToolRow("TodoWrite", "builtin", 2_500, 5, 0, None, "", 0, None),
    ToolRow("WebFetch", "builtin", 1_200, 5, 3, "WebFetch", "removed by WebFetch", 4_321, 0.05),
    ToolRow("Read", "builtin", 900, 5, 120, None, "", 0, None),
]
SUGGESTIONS = [Suggestion("TodoWrite", "builtin", 2_500, 5, 9.5, 2_500, 0.0075, "sonnet-4-5", "never called in 5 sessions",
                          True, "declared, never called")]
DATA = ToolsData(1.0, True, TOOLS, ("mcp__linear", "WebFetch"), SUGGESTIONS, withheld=2, coverage_sessions=5,
                 coverage_days=9.5, thresholds={"min_sessions": 3, "min_days": 2.0}, realized_tokens=4_321,
                 realized_usd=0.05)
RUNNING = ProxyState(True, {"port": 1}, {"tool_filter": True})
STOPPED = ProxyState(False, {}, {"tool_filter": True}, "no proxy running", "no runtime file")


def tools_app():
    return host(lambda: ToolsView(id="tools"), css="ToolsView { height: 1fr; }")


async def _at(pilot, table: str, name: str) -> None:
    t = pilot.app.query_one(table, DataTable)
    t.focus()
    t.move_cursor(row=row_keys(pilot.app, table).index(name))
    await settle(pilot)


async def test_the_inventory_and_the_suggestions_as_given():
    app = tools_app()
    async with app.run_test(size=(80, 30)) as pilot:
        view = app.query_one("#tools", ToolsView)
        view.show(DATA)
        await settle(pilot)
        assert text_of(app, "#tools-reason") == "toggles disabled: looking for a proxy…"  # no poll answered yet
        summary = text_of(app, "#tools-summary")
        assert "4 names, 5 sessions · removal list: mcp__linear, WebFetch" in summary
        assert "realized by the filter: 4,321 tokens ($0.05)" in summary
        assert row_keys(app, "#tools-table") == [t.name for t in TOOLS]
        assert row_text(app, "#tools-table", "mcp__linear__create_issue")[0] == "[x] remove"
        assert row_text(app, "#tools-table", "mcp__linear__create_issue")[6] == "mcp__linear"
        assert row_text(app, "#tools-table", "WebFetch")[6:] == ["itself", "4,321"]
        assert row_text(app, "#tools-table", "Read")[0] == "[ ] keep" and row_text(app, "#tools-table", "Read")[7] == ""
        assert row_text(app, "#suggest-table", "TodoWrite") == ["TodoWrite", "builtin", "2,500", "5", "9.5", "0",
                                                               "2,500 tok ≈ $0.01", "built-in: f"]
        sub = text_of(app, "#suggest-summary")
        assert "never called in ≥ 3 sessions over ≥ 2 days (coverage: 5 sessions, 9.5 days; 2 withheld)" in sub
        assert app.query_one("#tool-filter-switch", Switch).value is True  # the data's, until a proxy answers
        await _at(pilot, "#suggest-table", "TodoWrite")
        detail = text_of(app, "#tools-detail")
        assert detail.startswith("TodoWrite (builtin) declared, never called") and "a built-in: needs f (force)" in detail
        await _at(pilot, "#tools-table", "mcp__linear__create_issue")
        assert text_of(app, "#tools-detail") == ("mcp__linear__create_issue (mcp): 3,000 tokens per request, declared in "
                                                 "4 session(s), called 0 time(s) · removed by mcp__linear")
        await pilot.press("tab")  # regression: the detail stayed on the inventory's row until the cursor moved
        await settle(pilot)
        assert app.focused is app.query_one("#suggest-table", DataTable)
        assert text_of(app, "#tools-detail").startswith("TodoWrite (builtin)")
        view.show(replace(DATA, tool_filter=False))
        await settle(pilot)
        assert row_text(app, "#tools-table", "WebFetch")[6] == "itself (filter off)"
        view.show(ToolsData(1.0, False))
        await settle(pilot)
        assert app.query_one("#tools-table", DataTable).row_count == 0 and text_of(app, "#tools-detail") == ""
        assert "removal list: empty" in text_of(app, "#tools-summary")
        view.show(ToolsData(1.0, False, missing="no tool inventory yet"))
        await settle(pilot)
        assert text_of(app, "#tools-summary") == "Nothing to show yet: no tool inventory yet."


async def test_space_f_and_the_switch_ask_the_proxy():
    app = tools_app()
    async with app.run_test(size=(80, 30)) as pilot:
        view = app.query_one("#tools", ToolsView)
        view.show(DATA)
        view.show_proxy(RUNNING)
        await settle(pilot)
        assert not app.query_one("#tool-filter-switch", Switch).disabled
        assert "space: remove/restore" in text_of(app, "#tools-reason")
        await _at(pilot, "#tools-table", "Read")
        await pilot.press("space")
        await _at(pilot, "#tools-table", "WebFetch")
        await pilot.press("space")  # removed by itself: restored
        await pilot.press("f")  # force: removed again, whatever the list says
        await _at(pilot, "#suggest-table", "TodoWrite")
        await pilot.press("f")
        await _at(pilot, "#tools-table", "mcp__linear__create_issue")
        await pilot.press("space")  # covered by its server: a warning, nothing asked
        await pilot.click("#tool-filter-switch")
        await settle(pilot)
        assert app.posted == [
            ControlRequested("remove Read", "tools", {"op": "remove", "name": "Read", "force": False, "source": "dashboard"}),
            ControlRequested("restore WebFetch", "tools", {"op": "restore", "name": "WebFetch", "source": "dashboard"}),
            ControlRequested("remove WebFetch", "tools", {"op": "remove", "name": "WebFetch", "force": True,
                                                          "source": "dashboard"}),
            ControlRequested("remove TodoWrite", "tools", {"op": "remove", "name": "TodoWrite", "force": True,
                                                           "source": "dashboard"}),
            ControlRequested("tool filter off", "tools", {"op": "off", "source": "dashboard"}),
        ]
        assert [str(n.message) for n in app._notifications] == [
            "mcp__linear__create_issue is removed with mcp__linear: restore mcp__linear instead"]


async def test_without_a_proxy_nothing_is_asked_and_the_reason_is_shown():
    app = tools_app()
    async with app.run_test(size=(80, 30)) as pilot:
        view = app.query_one("#tools", ToolsView)
        view.show(DATA)
        view.show_proxy(STOPPED)
        await settle(pilot)
        switch = app.query_one("#tool-filter-switch", Switch)
        assert switch.disabled and switch.tooltip == "no runtime file"
        assert text_of(app, "#tools-reason") == "toggles disabled: no proxy running"
        await _at(pilot, "#tools-table", "Read")
        await pilot.press("space")
        await pilot.press("f")
        await settle(pilot)
        assert app.posted == []
        assert [str(n.message) for n in app._notifications] == ["Cannot change Read: no proxy running"] * 2
        view.show(ToolsData(1.0, False))
        view.show_proxy(RUNNING)
        await settle(pilot)
        await pilot.press("space")  # nothing highlighted in an empty inventory: nothing asked
        await settle(pilot)
        assert app.posted == []
