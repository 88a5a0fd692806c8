"""The dashboard driven by keys (Pilot): tabs, figures on screen, toggles through a real proxy."""

from __future__ import annotations

import pytest
from textual.widgets import DataTable, RadioSet, Switch, TabbedContent

from scalpel_desktop import clock
from scalpel_desktop.config import Config
from scalpel_desktop.paths import dirs
from scalpel_desktop.runtime import Runtime
from scalpel_desktop.store.ledger_queries import open_readonly, today_savings
from scalpel_desktop.tui import format as fmt
from scalpel_desktop.tools.store import ToolStore
from scalpel_desktop.tui.app import make_app
from scalpel_desktop.tui.screens.sessions import COLUMNS
from tests.tui.helpers import (
    CONVERSATION, PANES, expected_realized, expected_session, listed_sessions, row_keys, row_text, settle, text_of, wait_until,
)
from tests.tui.seed import NOW

SIZE = (120, 40)
AT = {key: i for i, (key, _label) in enumerate(COLUMNS)}  # a sessions cell's place, by its column's key
pytestmark = pytest.mark.anyio


def frozen() -> float:
    return NOW


@pytest.fixture
def proxy():
    """A real proxy runtime on a free port (its upstream is never called here), with the tools action."""
    from scalpel_desktop.tools.actions import register

    rt = Runtime(Config.load(), {"anthropic_upstream": "http://127.0.0.1:9"}, port=0).start()
    register(rt)
    yield rt
    rt.stop()


async def test_number_keys_switch_tabs_and_show_the_seeded_figures(seeded):
    app = make_app(clock=frozen)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        tabs = app.query_one("#tabs", TabbedContent)
        assert tabs.active == "sessions"
        # Sessions: context now, its share of the window, cache share, turns.
        assert row_keys(app, "#sessions-table") == listed_sessions(seeded)
        for session in listed_sessions(seeded):
            exp = expected_session(seeded, session)
            cells = row_text(app, "#sessions-table", session)
            assert cells[AT["context"]] == f"{exp['context']:,}"
            assert cells[AT["share"]].endswith(f"{exp['share'] * 100:.0f}%")
            assert cells[AT["cache"]] == f"{exp['cache'] * 100:.0f}%"
            assert cells[AT["turns"]] == str(exp["turns"])
            assert cells[AT["realized"]] == fmt.tokens(exp["realized"])
        # Today's saving, from the reader's query (the tray's, the statusline's, `scalpel status`'s).
        conn = open_readonly()
        today = today_savings(conn, NOW)
        conn.close()
        assert today.tokens > 0
        summary = text_of(app, "#sessions-summary")
        # count_tokens calls are not requests: counted apart, from the seeded rows alone
        midnight = clock.start_of_today(NOW)
        todays = [r for r in seeded.requests if midnight <= r["ts"] <= NOW]
        requests = sum(r["endpoint"] in CONVERSATION for r in todays)
        side = sum(r["endpoint"] == "count_tokens" for r in todays)
        assert side > 0 and (today.requests, today.side_calls) == (requests, side)
        assert (f"{requests:,} request(s) (+{side:,} count_tokens) today, saved {today.tokens:,} tokens "
                f"({fmt.usd(today.usd)}) today" in summary), summary
        for i, pane in enumerate(PANES, 1):
            await pilot.press(str(i))
            await settle(pilot)
            assert tabs.active == pane
        await pilot.press("2")
        await settle(pilot)
        for key, days in (("today", 1), ("week", 7), ("month", 30)):
            tokens, usd = expected_realized(seeded, days)
            card = text_of(app, f"#savings-{key}")
            assert f"{tokens:,} tokens" in card and f"${usd:,.2f}" in card, card
        await pilot.press("3")
        await settle(pilot)
        assert app.query_one("#cuts-table", DataTable).row_count == len(seeded.cuts)
        changed = sum(1 for r in seeded.requests if r["decision"] != "unchanged")
        assert app.query_one("#decisions-table", DataTable).row_count == min(200, changed)
        await pilot.press("a")  # every request, unchanged ones too; a count_tokens call is no request
        await settle(pilot)
        requests = sum(r["endpoint"] in CONVERSATION for r in seeded.requests)
        assert requests < len(seeded.requests)
        assert app.query_one("#decisions-table", DataTable).row_count == min(200, requests)
        side = sum(r["endpoint"] == "count_tokens" for r in seeded.requests)
        assert text_of(app, "#decisions-summary").endswith(f" · count_tokens {side:,} (not requests)")
        await pilot.press("a")
        await settle(pilot)
        newest = min(seeded.cuts, key=lambda c: (-c.created_at, c.tool_use_id))  # newest first, then by id
        detail = text_of(app, "#cut-detail")
        assert "~/.local/share/scalpel/data/spill/" in detail and newest.original_sha256[:12] in detail


async def test_toggles_are_disabled_with_the_reason_when_no_proxy_runs(seeded):
    app = make_app(clock=frozen)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert "no proxy running" in text_of(app, "#proxy-bar")
        await pilot.press("4")
        await settle(pilot)
        assert app.query_one("#tool-filter-switch", Switch).disabled
        assert "toggles disabled: no proxy running" in text_of(app, "#tools-reason")
        app.query_one("#tools-table", DataTable).focus()
        await pilot.press("space")
        await settle(pilot)
        await pilot.press("5")
        await settle(pilot)
        assert app.query_one("#pause-switch", Switch).disabled
        assert app.query_one("#tier-set", RadioSet).disabled and app.query_one("#policy-set", RadioSet).disabled
        assert "Controls disabled: no proxy running" in text_of(app, "#settings-reason")
    store = ToolStore.open()
    try:
        assert set(store.removals()) == set(seeded.removals)  # the key press changed nothing
    finally:
        store.close()


async def test_settings_toggles_act_through_the_running_proxy(seeded, proxy):
    app = make_app(clock=frozen)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert f"127.0.0.1:{proxy.port}" in text_of(app, "#proxy-bar")
        await pilot.press("5")
        await settle(pilot)
        pause = app.query_one("#pause-switch", Switch)
        assert not pause.disabled and pause.value is False
        await pilot.click("#pause-switch")
        assert await wait_until(pilot, lambda: proxy.setting("paused") is True)
        await settle(pilot)
        assert "PAUSED" in text_of(app, "#proxy-bar")
        await pilot.click("#tier-1")
        assert await wait_until(pilot, lambda: proxy.setting("tier") == 1)
        await pilot.click("#policy-payback")
        assert await wait_until(pilot, lambda: proxy.setting("policy") == "payback")
        await pilot.click("#filter-switch")
        assert await wait_until(pilot, lambda: proxy.setting("tool_filter") is True)
        await pilot.click("#pause-switch")
        assert await wait_until(pilot, lambda: proxy.setting("paused") is False)
    saved = Config.load()
    assert (saved.get("tier"), saved.get("policy"), saved.get("tool_filter")) == (1, "payback", True)


async def test_tool_toggles_call_the_filter_through_the_control_api(seeded, proxy):
    app = make_app(clock=frozen)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("4")
        await settle(pilot)
        suggestions = app.query_one("#suggest-table", DataTable)
        suggestions.focus()
        keys = row_keys(app, "#suggest-table")
        suggestions.move_cursor(row=keys.index("mcp__playwright"))
        await pilot.press("space")
        await settle(pilot)
        assert "mcp__playwright" not in row_keys(app, "#suggest-table")  # re-read: no longer suggested
        assert row_text(app, "#tools-table", "mcp__playwright__browser_click")[0] == "[x] remove"
        # A built-in needs force: space is refused (the error is shown), f removes it.
        keys = row_keys(app, "#suggest-table")
        suggestions.move_cursor(row=keys.index("TodoWrite"))
        await pilot.press("space")
        await settle(pilot)
        assert any("built-in" in str(n.message) for n in app._notifications)
        await pilot.press("f")
        await settle(pilot)
        inventory = app.query_one("#tools-table", DataTable)
        inventory.focus()
        inventory.move_cursor(row=row_keys(app, "#tools-table").index("mcp__playwright__browser_click"))
        await pilot.press("space")  # covered by mcp__playwright: a warning, no change
        await settle(pilot)
        await pilot.click("#tool-filter-switch")
        assert await wait_until(pilot, lambda: proxy.setting("tool_filter") is True)
    store = ToolStore.open()
    try:
        removals = store.removals()
        history = store.history()
    finally:
        store.close()
    assert set(removals) == {"mcp__linear", "mcp__playwright", "TodoWrite"}
    assert removals["TodoWrite"]["forced"] and removals["mcp__playwright"]["source"] == "dashboard"
    assert [(h["action"], h["name"], h["source"]) for h in history[-3:]] == [
        ("remove", "mcp__playwright", "dashboard"), ("remove", "TodoWrite", "dashboard"), ("on", "", "dashboard")]


async def test_restore_from_the_inventory(seeded, proxy):
    store = ToolStore.open()
    store.add_removal("WebFetch", "cli", forced=True)
    store.close()
    app = make_app(clock=frozen)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("4")
        await settle(pilot)
        inventory = app.query_one("#tools-table", DataTable)
        inventory.focus()
        inventory.move_cursor(row=row_keys(app, "#tools-table").index("WebFetch"))
        assert row_text(app, "#tools-table", "WebFetch")[0] == "[x] remove"
        await pilot.press("space")
        await settle(pilot)
        assert row_text(app, "#tools-table", "WebFetch")[0] == "[ ] keep"
    store = ToolStore.open()
    try:
        assert "WebFetch" not in store.removals()
    finally:
        store.close()


async def test_refreshes_live_while_the_proxy_runs(seeded, proxy):
    from scalpel_desktop.store.ledger import LedgerWriter

    app = make_app(clock=frozen, refresh_s=0.2)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert "s-brand-new" not in row_keys(app, "#sessions-table")
        w = LedgerWriter(dirs().database)
        w.submit({"ts": NOW - 5, "session": "s-brand-new", "endpoint": "messages", "model": "claude-opus-4-1",
                  "input_tokens": 10, "cache_write_5m": 30_000, "cache_write_1h": 0, "cache_read": 10_000,
                  "output_tokens": 100, "decision": "unchanged"})
        assert w.flush(10)
        w.close()
        assert await wait_until(pilot, lambda: "s-brand-new" in row_keys(app, "#sessions-table"))
        assert row_text(app, "#sessions-table", "s-brand-new")[AT["context"]] == f"{40_010:,}"
        assert row_text(app, "#sessions-table", "s-brand-new")[AT["share"]].endswith("20%")


async def test_without_a_ledger_every_tab_says_why(isolated_home):
    app = make_app(clock=frozen)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert "no ledger at ~/.local/share/scalpel/" in text_of(app, "#sessions-summary")
        for key, selector in (("2", "#savings-notes"), ("3", "#decisions-summary"), ("4", "#tools-summary")):
            await pilot.press(key)
            await settle(pilot)
            assert "Nothing to show yet" in text_of(app, selector)
