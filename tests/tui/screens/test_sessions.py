"""tui/screens/sessions.py: one row per session, the highlighted one's detail and context bars.

The figures against the seeded ledger are in tests/tui/test_app.py and
test_views.py; here the view alone in a bare app, given ``SessionsData`` built
by hand: what each cell says, what follows the cursor, and the empty states.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from textual.widgets import DataTable

from scalpel_desktop.tui.data import SessionRow, SessionsData
from scalpel_desktop.tui.screens.sessions import COLUMNS, TITLE_CELL, SessionsView, cells, decision_style
from scalpel_desktop.tui.views_data import ContextBreakdown
from scalpel_desktop.tui.widgets.context_bars import ContextBars
from tests.tui.helpers import host, row_keys, row_text, settle, text_of

pytestmark = pytest.mark.anyio
NOW = 1_800_000_000.0


def session(sid: str, **kw) -> SessionRow:
    base = dict(session=sid, model="claude-sonnet-4-5-20250929", context_tokens=120_000, context_source="usage",
                window=200_000, cache_share=0.9, cache_requests=10, turns=12, subagent_requests=2,
                last_ts=NOW - 90, last_decision="cut", last_reason="superseded read", realized_tokens=4_321,
                realized_usd=0.02, active=True, project="~/work/scalpel-desktop", title="Fix the tray", cost_usd=1.25,
                misses=3, miss_usd=0.4215)
    return SessionRow(**{**base, **kw})


ROWS = [session("aaaaaaaa-1111"), session("aaaaaaaa-2222", active=False, project="", title="", context_tokens=None,
                                          context_source="", cache_share=None, last_decision="", last_ts=NOW - 7200,
                                          misses=0, miss_usd=0.0)]
CTX = ContextBreakdown("aaaaaaaa-1111", "m", 200_000, 120_000, True, (("messages", "Messages", 120_000),))
DATA = SessionsData(NOW, ROWS, requests_today=321, saved_tokens_today=45_678, saved_usd_today=0.5,
                    contexts={"aaaaaaaa-1111": CTX})
AT = {key: i for i, (key, _label) in enumerate(COLUMNS)}  # a cell's place, by its column's key


def test_the_cells_say_each_figure_once_in_its_column():
    got = [str(c) for c in cells(ROWS[0], NOW)]
    assert len(got) == len(COLUMNS)
    assert got == ["● scalpel-desktop", "aaaaaaaa-1111", "Fix the tray", "$1.25", "4,321", "$0.42", "120,000",
                   "██████···· " + " 60%", "90%", "12", "sonnet-4-5", "cut", "1m ago"]
    assert AT["realized"] == AT["cost"] + 1  # the saving next to the cost, before the wide columns
    assert AT["misses"] == AT["realized"] + 1  # what the misses cost right after
    unknown = [str(c) for c in cells(ROWS[1], NOW, "aaaaaaaa-2")]
    assert unknown[:3] == ["○ ?", "aaaaaaaa-2", "—"] and unknown[AT["context"]] == "—"
    assert unknown[AT["share"]].endswith("   —")
    assert unknown[AT["cache"]] == "—" and unknown[AT["decision"]] == "—"
    assert unknown[AT["misses"]] == "—"  # no miss: no figure, not $0.00


def test_an_estimated_context_is_marked_and_a_long_title_clipped():
    row = session("s", context_source="estimate", title="x" * 60)
    got = [str(c) for c in cells(row, NOW)]
    assert got[AT["context"]] == "120,000~"
    assert len(got[2]) == TITLE_CELL and got[2].endswith("…")


@pytest.mark.parametrize("share, style", [(0.1, "green"), (0.5, "yellow"), (0.79, "yellow"), (0.8, "red"), (1.2, "red")])
def test_the_share_turns_yellow_then_red_as_the_window_fills(share, style):
    bar = cells(session("s", context_tokens=int(share * 200_000)), NOW)[AT["share"]]
    assert str(bar.spans[0].style) == style


@pytest.mark.parametrize("decision, style", [
    ("cut", "bold green"), ("cut+filtered", "bold green"), ("replayed+filtered", "green"), ("filtered", "bold cyan"),
    ("error", "bold red"), ("paused", "yellow"), ("skipped", "magenta"), ("unchanged", ""), ("", ""), (None, "")])
def test_a_decision_is_coloured_by_its_most_telling_change(decision, style):
    assert decision_style(decision) == style


async def test_the_table_the_detail_and_the_bars_follow_the_data_and_the_cursor():
    app = host(lambda: SessionsView(id="sessions"))
    async with app.run_test(size=(80, 24)) as pilot:
        view = app.query_one("#sessions", SessionsView)
        view.show(DATA)
        await settle(pilot)
        assert row_keys(app, "#sessions-table") == ["aaaaaaaa-1111", "aaaaaaaa-2222"]
        assert [row_text(app, "#sessions-table", k)[1] for k in row_keys(app, "#sessions-table")] == [
            "aaaaaaaa-1", "aaaaaaaa-2"]  # the shortest prefixes that tell them apart
        summary = text_of(app, "#sessions-summary")
        assert summary.startswith("2 session(s) seen in the last 24 h, 1 active")
        assert "321 request(s) today, saved 45,678 tokens ($0.50) today" in summary
        detail = text_of(app, "#sessions-detail")
        assert "aaaaaaaa-1111" in detail and "120,000 tokens (provider usage counts)" in detail
        assert "Cache misses 3, $0.42 of cache re-writes" in detail
        assert app.query_one("#sessions-context", ContextBars).ctx is CTX
        table = app.query_one("#sessions-table", DataTable)
        table.focus()
        await pilot.press("down")
        await settle(pilot)
        detail = text_of(app, "#sessions-detail")
        assert "aaaaaaaa-2222" in detail and "(no title: no transcript on disk)" in detail
        assert "Context now unknown" in detail and "Project not stated" in detail
        assert "Cache misses none" in detail
        assert app.query_one("#sessions-context", ContextBars).ctx is None  # no breakdown for this one
        # a refresh keeps the cursor where it was
        view.show(replace(DATA, rows=[replace(r, turns=r.turns + 1) for r in ROWS]))
        await settle(pilot)
        assert table.cursor_row == 1 and "aaaaaaaa-2222" in text_of(app, "#sessions-detail")
        # fewer rows than the cursor: it moves to the last one
        view.show(replace(DATA, rows=ROWS[:1]))
        await settle(pilot)
        assert table.cursor_row == 0 and "aaaaaaaa-1111" in text_of(app, "#sessions-detail")
        view.show(SessionsData(NOW))
        await settle(pilot)
        assert table.row_count == 0 and text_of(app, "#sessions-detail") == ""
        assert text_of(app, "#sessions-summary").startswith("0 session(s) seen")
        assert app.query_one("#sessions-context", ContextBars).ctx is None
        view.show(SessionsData(NOW, missing="no ledger at ~/x"))
        await settle(pilot)
        assert text_of(app, "#sessions-summary") == "Nothing to show yet: no ledger at ~/x."


async def test_each_sessions_miss_cost_is_its_seeded_misses(seeded):
    """The Misses column on the seeded ledger (real writer, real miss rows), figures from the rows."""
    from scalpel_desktop.tui import format as fmt
    from scalpel_desktop.tui.app import make_app
    from tests.tui.conftest import frozen
    from tests.tui.helpers import listed_sessions, session_miss_cost

    app = make_app(clock=frozen)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        listed = listed_sessions(seeded)
        with_misses = 0
        for sid in listed:
            n, cost = session_miss_cost(seeded, sid)
            cell = row_text(app, "#sessions-table", sid)[AT["misses"]]
            assert cell == (fmt.usd(cost) if n else "—"), sid
            with_misses += bool(n)
        assert 0 < with_misses  # the seed gives listed sessions misses, or this proves nothing
