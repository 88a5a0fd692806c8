"""tui/screens/usage.py: the Usage tab draws the tallies it is given, newest first, and says
when there is no active block or nothing at all.

Its figures against the seeded ledger are in tests/tui/test_views.py; here the
view alone in a bare app, given ``UsageData`` built by hand.
"""

from __future__ import annotations

from datetime import datetime

import pytest
from textual.widgets import DataTable

from scalpel_desktop.accounting.usage_views import Block, Tally
from scalpel_desktop.tui.screens.usage import TALLY_COLUMNS, UsageView, block_text, tally_cells
from scalpel_desktop.tui.views_data import UsageData
from scalpel_desktop.tui.widgets.barchart import BarChart
from tests.tui.helpers import host, row_keys, row_text, settle, text_of

pytestmark = pytest.mark.anyio
NOW = datetime(2026, 11, 30, 15, 30).timestamp()  # the tests' TZ is UTC (tests/tui/conftest.py)


def tally(key: str, scale: int = 1, cost: float = 1.5) -> Tally:
    return Tally(key, input=10 * scale, output=2_000 * scale, cache_write=30_000 * scale, cache_read=400_000 * scale,
                 cost_usd=cost, requests=3 * scale)


DAYS = tuple(tally(f"2026-11-{d:02d}", d, cost=d / 10) for d in (3, 17, 29, 30))
MONTHS = (tally("2026-10", 40, 12.0), tally("2026-11", 50, 20.25))
ENDED = Block(NOW - 9 * 3600, NOW - 4 * 3600, NOW - 9 * 3600, NOW - 8 * 3600, tally("2026-11-30 06:00"))
ACTIVE = Block(datetime(2026, 11, 30, 14).timestamp(), datetime(2026, 11, 30, 19).timestamp(), NOW - 3000, NOW - 60,
               tally("2026-11-30 14:00", 2, 3.0), active=True, tokens_per_min=1_234.4, usd_per_hour=3.6,
               projected_tokens=2_000_000, projected_usd=14.5)
DATA = UsageData(NOW, DAYS, MONTHS, (ENDED, ACTIVE), prices_as_of="2026-11-01")


def test_a_tally_row_is_tokens_by_tier_then_the_total_and_the_cost():
    t = tally("x", 2, cost=0.004)
    assert [str(c) for c in tally_cells(t)] == ["20", "4,000", "60,000", "800,000", "864,020", "$0.0040"]
    assert len(tally_cells(t)) == len(TALLY_COLUMNS)


def test_the_block_head_with_and_without_an_active_block():
    text = block_text(DATA).plain
    assert text.startswith("Active block since 14:00, ends 19:00 · 864,020 tokens, $3.00")
    assert "Burn rate 1,234 tokens/min · $3.60/hour · projected 2,000,000 tokens ≈ $14.50 by 19:00" in text
    ended = UsageData(NOW, blocks=(ENDED,))
    assert block_text(ended).plain == "No active 5-hour block (the last one started 2026-11-30 06:00)"
    assert block_text(UsageData(NOW)).plain == "No active 5-hour block"


async def test_the_tab_shows_the_tallies_newest_first_and_what_is_missing():
    app = host(lambda: UsageView(id="usage"))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        view = app.query_one("#usage", UsageView)
        assert text_of(app, "#usage-block") == "Reading the ledger…"
        view.show(DATA)
        await settle(pilot)
        assert row_keys(app, "#usage-daily") == [t.key for t in DAYS[::-1]]
        assert row_keys(app, "#usage-monthly") == ["2026-11", "2026-10"]
        assert row_text(app, "#usage-monthly", "2026-11") == ["2026-11"] + [str(c) for c in tally_cells(MONTHS[1])]
        blocks = app.query_one("#usage-blocks", DataTable)
        assert blocks.row_count == 2
        active = [str(c) for c in blocks.get_row_at(0)]
        assert active[:2] == ["2026-11-30 14:00", "active"] and active[5:7] == ["1,234", "$3.60"]
        assert active[7] == "2,000,000 ≈ $14.50 (projection)"
        ended = [str(c) for c in blocks.get_row_at(1)]
        assert ended[1] == "ended" and ended[5:] == ["", "", ""]  # no burn rate for a block that ended
        bars = app.query_one("#usage-chart", BarChart).bars
        assert [(b.label, b.value) for b in bars] == [(t.key[-2:], t.cost_usd) for t in DAYS]
        assert bars[-1].style != bars[0].style  # today stands out
        assert "since 2026-11-03 (days with requests)" in text_of(app, "#usage-chart-title")
        assert "as of 2026-11-01" in text_of(app, "#usage-notes")
        # a later read with fewer rows replaces, never appends
        view.show(UsageData(NOW, DAYS[-1:], MONTHS[-1:], (), "2026-11-01"))
        await settle(pilot)
        assert row_keys(app, "#usage-daily") == ["2026-11-30"] and app.query_one("#usage-blocks", DataTable).row_count == 0
        assert text_of(app, "#usage-block") == "No active 5-hour block"
        view.show(UsageData(NOW, missing="the ledger has no requests table yet"))
        await settle(pilot)
        assert text_of(app, "#usage-block") == "Nothing to show yet: the ledger has no requests table yet."


async def test_with_no_usage_at_all_the_tables_are_empty_and_the_chart_flat():
    app = host(lambda: UsageView(id="usage"))
    async with app.run_test(size=(80, 24)) as pilot:
        app.query_one("#usage", UsageView).show(UsageData(NOW, prices_as_of="2026-11-01"))
        await settle(pilot)
        assert all(app.query_one(t, DataTable).row_count == 0 for t in ("#usage-daily", "#usage-monthly", "#usage-blocks"))
        assert app.query_one("#usage-chart", BarChart).bars == ()
        assert text_of(app, "#usage-chart-title").startswith("Cost per day  ")  # no "since"
        assert text_of(app, "#usage-block") == "No active 5-hour block"
        assert all(len(line) <= 80 for line in app.query_one("#usage-chart", BarChart).render().plain.split("\n"))
