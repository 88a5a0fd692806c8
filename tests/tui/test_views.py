"""The everyday views on screen (Pilot): projects, titles, cost per session, the context breakdown
and the Usage tab, against figures computed here from the rows the seed wrote (real writers)."""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime

import pytest

from scalpel_desktop.accounting.prices import PriceTable
from scalpel_desktop.wire.usage import Usage
from scalpel_desktop.tui import format as fmt
from scalpel_desktop.tui.app import make_app
from scalpel_desktop.tui.screens.sessions import TITLE_CELL
from tests.tui.conftest import frozen
from tests.tui.helpers import open_tab, CONVERSATION, listed_sessions, prompt_of, row_text, settle
from tests.tui.seed import NOW

pytestmark = pytest.mark.anyio
SIZE = (120, 40)


def _cost(r: dict, prices: PriceTable) -> float:
    return prices.rates(r["model"]).cost(Usage(r["input_tokens"] or 0, r["cache_write_5m"] or 0,
                                               r["cache_write_1h"] or 0, r["cache_read"] or 0,
                                               r["output_tokens"] or 0))


def _with_usage(r: dict) -> bool:
    return any(r[k] is not None for k in ("input_tokens", "cache_read", "output_tokens"))


async def test_sessions_named_by_project_and_title_with_their_cost(seeded):
    prices = PriceTable.load()
    app = make_app(clock=frozen)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        for session in listed_sessions(seeded):
            info = seeded.sessions[session]
            cells = row_text(app, "#sessions-table", session)
            project = info["project"]
            assert cells[0].endswith(project.rsplit("/", 1)[-1] if project else "?")
            assert cells[2] == (fmt.clip(info["title"], TITLE_CELL) if "title" in info else "—")
            assert session.startswith(cells[1]) and len(cells[1]) >= 8
            cost = sum(_cost(r, prices) for r in seeded.requests
                       if r["session"] == session and _with_usage(r) and r["ts"] <= NOW)
            assert cells[3] == fmt.usd(cost)


async def test_context_breakdown_sums_to_the_measured_prompt(seeded):
    app = make_app(clock=frozen)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        session = listed_sessions(seeded)[0]
        main = [r for r in seeded.requests if r["session"] == session and not r["agent"]
                and r["endpoint"] in CONVERSATION and r["ts"] <= NOW]
        latest = max(main, key=lambda r: r["ts"])
        bars = app.query_one("#sessions-context")
        ctx = bars.ctx
        assert ctx.session == session and ctx.measured and ctx.total == prompt_of(latest)
        assert sum(t for _, _, t in ctx.regions) == ctx.total  # scaled to the measured total
        assert ctx.free == 200_000 - ctx.total and ctx.removed == latest["tokens_removed"]
        text = str(bars.content)
        assert f"Context {ctx.total:,} of 200,000" in text and "estimate, scaled to the measured total" in text
        for _, label, tokens in ctx.regions:
            assert label in text and f"{tokens:,}" in text
        assert sum(c.tokens for c in seeded.cuts if c.session == session) == ctx.cut_tokens


async def test_usage_tab_daily_monthly_and_the_active_block(seeded):
    prices = PriceTable.load()
    days: dict[str, list] = defaultdict(list)
    for r in seeded.requests:
        if _with_usage(r) and NOW - 31 * 86400 <= r["ts"] <= NOW:
            days[datetime.fromtimestamp(r["ts"]).strftime("%Y-%m-%d")].append(r)
    app = make_app(clock=frozen)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await open_tab(pilot, "usage")
        shown = 0
        for day, rows in days.items():
            if day < datetime.fromtimestamp(NOW - 30 * 86400).strftime("%Y-%m-%d"):
                continue
            cells = row_text(app, "#usage-daily", day)
            out = sum(r["output_tokens"] or 0 for r in rows)
            total = sum((r["input_tokens"] or 0) + (r["cache_write_5m"] or 0) + (r["cache_write_1h"] or 0)
                        + (r["cache_read"] or 0) + (r["output_tokens"] or 0) for r in rows)
            assert cells[2] == f"{out:,}" and cells[5] == f"{total:,}"
            assert cells[6] == fmt.usd(sum(_cost(r, prices) for r in rows))
            shown += 1
        assert shown >= 10
        head = str(app.query_one("#usage-block").content)
        assert "Active block" in head and "Burn rate" in head and "projected" in head
        month = datetime.fromtimestamp(NOW).strftime("%Y-%m")
        mrows = [r for r in seeded.requests if _with_usage(r) and r["ts"] <= NOW
                 and datetime.fromtimestamp(r["ts"]).strftime("%Y-%m") == month]
        assert row_text(app, "#usage-monthly", month)[6] == fmt.usd(sum(_cost(r, prices) for r in mrows))
