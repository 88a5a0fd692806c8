"""tui/screens/misses.py: the Misses tab on the seeded ledger (real writer, real miss rows), its figures
computed here from the rows the seed wrote; ``p`` cycles the periods; and the view alone for its empty
states and the detail that follows the cursor."""

from __future__ import annotations

import pytest
from textual.widgets import DataTable

from scalpel_desktop.tui import format as fmt
from scalpel_desktop.tui.app import make_app
from scalpel_desktop.tui.screens.misses import CAUSE_COLUMNS, SESSION_COLUMNS, MissesView
from scalpel_desktop.tui.views_data import MISS_DEFAULT_PERIOD, MISS_PERIODS, MissesData, MissPeriod, Names
from tests.tui.conftest import frozen
from tests.tui.helpers import open_tab, expected_misses, host, row_keys, row_text, settle, text_of

pytestmark = pytest.mark.anyio
C = {key: i for i, (key, _) in enumerate(CAUSE_COLUMNS)}
S = {key: i for i, (key, _) in enumerate(SESSION_COLUMNS)}


def _assert_period_shown(app, seeded, days: int, label: str) -> None:
    want = expected_misses(seeded, days)
    summary = " ".join(text_of(app, "#misses-summary").split())
    assert summary.startswith(f"{label}: {want['count']:,} misses re-wrote {fmt.tokens(want['tokens'])} tokens, "
                              f"{fmt.usd(want['cost'])}, {fmt.pct(want['cost'] / want['bill'])} of the bill "
                              f"({fmt.usd(want['bill'])})"), summary
    assert row_keys(app, "#misses-causes") == [c for c in row_keys(app, "#misses-causes")
                                               if c in want["by_cause"]]
    assert set(row_keys(app, "#misses-causes")) == set(want["by_cause"])
    for cause, (count, tokens, cost) in want["by_cause"].items():
        cells = row_text(app, "#misses-causes", cause)
        assert cells[:C["share"]] == [cause, f"{count:,}", fmt.tokens(tokens), fmt.usd(cost)]
        assert cells[C["share"]].endswith(f" {fmt.pct(cost / want['cost']):>4}")
    assert set(row_keys(app, "#misses-sessions")) == set(want["by_session"])
    for session, (count, cost, main) in want["by_session"].items():
        cells = row_text(app, "#misses-sessions", session)
        assert session.startswith(cells[S["session"]])
        assert [cells[S["count"]], cells[S["cost"]], cells[S["main"]]] == [f"{count:,}", fmt.usd(cost), main]
    costs = [want["by_session"][s][1] for s in row_keys(app, "#misses-sessions")]
    assert costs == sorted(costs, reverse=True)  # the costliest session first


async def test_the_tab_shows_the_seeded_misses_by_cause_and_by_session_and_p_cycles_the_periods(seeded):
    app = make_app(clock=frozen)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await open_tab(pilot, "misses")
        assert app.active_pane == "misses"
        view = app.query_one("#misses-view", MissesView)
        assert app.focused is app.query_one("#misses-causes", DataTable)  # its keys work at once
        order = [MISS_PERIODS[(MISS_DEFAULT_PERIOD + i) % len(MISS_PERIODS)] for i in range(len(MISS_PERIODS) + 1)]
        for i, (label, days) in enumerate(order):
            if i:
                await pilot.press("p")
                await settle(pilot)
            assert view.shown.label == label
            _assert_period_shown(app, seeded, days, label)


async def test_the_detail_names_the_highlighted_sessions_causes_and_the_providers_word(seeded):
    app = make_app(clock=frozen)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await open_tab(pilot, "misses")
        table = app.query_one("#misses-sessions", DataTable)
        table.focus()
        for row in range(min(3, table.row_count)):
            table.move_cursor(row=row)
            await settle(pilot)
            session = row_keys(app, "#misses-sessions")[row]
            detail = " ".join(text_of(app, "#misses-detail").split())
            assert detail.startswith(session)
            rows = [r for r in seeded.requests if r["session"] == session and r.get("miss_cause")
                    and r["ts"] >= view_since(app) and r["ts"] <= seeded.now]
            for cause in {r["miss_cause"] for r in rows}:
                mine = [r for r in rows if r["miss_cause"] == cause]
                assert f"{cause} {len(mine)} ({fmt.usd(sum(r['miss_usd'] for r in mine))})" in detail
            said = [r["provider_miss_reason"] for r in rows if r.get("provider_miss_reason")]
            for reason in set(said):
                assert f"{reason} {said.count(reason)}" in detail
            if not said:
                assert "not asked" in detail


def view_since(app) -> float:
    return app.query_one("#misses-view", MissesView).shown.since


# -- the view alone --------------------------------------------------------------------------


def _period(label: str, misses: list[tuple[str, str, int, float]]) -> MissPeriod:
    """A period from (session, cause, tokens, cost) misses, grouped as the store groups them."""
    from scalpel_desktop.store.misses import MissRow, by_cause, by_session

    rows = [MissRow(s, 1.0, "m", c, t, u, 0) for s, c, t, u in misses]
    return MissPeriod(label, 0.0, len(rows), sum(t for _, _, t, _ in misses), sum(u for *_, u in misses), 10.0,
                      tuple(by_cause(rows)), tuple(by_session(rows)))


async def test_an_empty_period_says_so_and_clears_the_tables():
    full = _period("7 days", [("aaaa1111", "ttl-expired", 5000, 0.5)])
    data = MissesData(1.0, (_period("Today", []), full, full), Names({"aaaa1111": "~/w/proj"}, {}))
    app = host(lambda: MissesView(id="misses-view"))
    async with app.run_test(size=(100, 30)) as pilot:
        view = app.query_one(MissesView)
        view.show(data)
        await settle(pilot)
        assert row_text(app, "#misses-sessions", "aaaa1111")[:S["main"] + 1] == [
            "proj", "aaaa1111", "1", "$0.50", "ttl-expired"]
        assert row_text(app, "#misses-sessions", "aaaa1111")[S["title"]] == "—"
        assert "5% of the bill ($10.00)" in text_of(app, "#misses-summary")
        view.period = 2  # the next press wraps round to today
        app.query_one("#misses-causes", DataTable).focus()
        await pilot.press("p")  # the view's own binding
        await settle(pilot)
        assert view.period == 0
        assert "Today: no cache miss" in text_of(app, "#misses-summary")
        assert app.query_one("#misses-causes", DataTable).row_count == 0
        assert app.query_one("#misses-sessions", DataTable).row_count == 0
        assert text_of(app, "#misses-detail") == ""
        view.show(MissesData(2.0, missing="the ledger cannot be read"))  # the last figures' tables stay
        assert text_of(app, "#misses-summary") == "Nothing to show yet: the ledger cannot be read."


async def test_the_main_cause_is_the_costliest_not_the_most_frequent():
    p = _period("7 days", [("s", "ttl-expired", 100, 0.01), ("s", "ttl-expired", 100, 0.01),
                           ("s", "tools-changed", 9000, 0.9)])
    data = MissesData(1.0, (p, p, p))
    app = host(lambda: MissesView(id="misses-view"))
    async with app.run_test(size=(100, 30)) as pilot:
        app.query_one(MissesView).show(data)
        await settle(pilot)
        assert row_text(app, "#misses-sessions", "s")[S["main"]] == "tools-changed"
        assert row_text(app, "#misses-causes", "ttl-expired")[C["count"]] == "2"
        got = row_text(app, "#misses-causes", "tools-changed")[C["share"]]
        assert got.endswith(f" {fmt.pct(0.9 / 0.92):>4}")

