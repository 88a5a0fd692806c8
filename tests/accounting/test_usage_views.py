"""Daily, monthly, 5-hour blocks and burn rate from usage rows (ccusage's views)."""

from __future__ import annotations

import os
import time
from datetime import datetime

import pytest

from scalpel_desktop.accounting import usage_views as uv
from scalpel_desktop.accounting.prices import PriceTable
from scalpel_desktop.wire.usage import Usage

MODEL = "claude-sonnet-4-5-20250929"


@pytest.fixture(autouse=True)
def utc(monkeypatch):
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def row(ts, i=10, w5=100, cr=1000, out=50, session="s1"):
    return (ts, session, MODEL, i, w5, 0, cr, out, None, None)


def test_daily_and_monthly_sum_tokens_and_price_them():
    prices = PriceTable.load()
    t0 = datetime(2026, 11, 30, 23, 0).timestamp()
    rows = [row(t0), row(t0 + 1800), row(t0 + 7200)]  # the last one is on Dec 1
    days = uv.daily(rows, prices)
    assert [d.key for d in days] == ["2026-11-30", "2026-12-01"]
    assert days[0].input == 20 and days[0].cache_write == 200 and days[0].cache_read == 2000
    assert days[0].total_tokens == 2 * (10 + 100 + 1000 + 50)
    assert days[0].cost_usd == pytest.approx(2 * prices.rates(MODEL).cost(Usage(10, 100, 0, 1000, 50)))
    assert [m.key for m in uv.monthly(rows, prices)] == ["2026-11", "2026-12"]
    assert os.environ["TZ"] == "UTC"


def test_blocks_start_at_the_hour_and_the_active_one_has_a_burn_rate():
    prices = PriceTable.load()
    start = datetime(2026, 12, 1, 9, 0).timestamp()
    rows = [row(start + 20 * 60), row(start + 80 * 60),  # one block from 09:00
            row(start + 6 * 3600 + 5 * 60), row(start + 6 * 3600 + 35 * 60)]  # another from 15:00
    now = start + 6 * 3600 + 65 * 60  # 16:05, the second block is active
    blocks = uv.blocks(rows, prices, now)
    assert [datetime.fromtimestamp(b.start).strftime("%H:%M") for b in blocks] == ["09:00", "15:00"]
    assert not blocks[0].active and blocks[1].active
    b = blocks[1]
    assert b.tally.requests == 2 and b.tally.total_tokens == 2 * 1160
    minutes = (now - b.first_ts) / 60
    assert b.tokens_per_min == pytest.approx(2 * 1160 / minutes)
    assert b.usd_per_hour == pytest.approx(b.tally.cost_usd / minutes * 60)
    left = (b.end - now) / 60
    assert b.projected_tokens == round(2 * 1160 + b.tokens_per_min * left)
    assert uv.blocks(rows, prices, start + 12 * 3600)[-1].active is False  # after its end: none active
