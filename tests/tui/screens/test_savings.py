"""tui/screens/savings.py: three period cards, a chart of realized tokens per day, and the notes
(the one-day-of-data chart test moved here from tests/tui/test_views.py).

The figures against the seeded ledger are in tests/tui/test_app.py; here the
view alone in a bare app at 80 columns, given ``SavingsData`` built by hand.
"""

from __future__ import annotations

from datetime import datetime

import pytest

from scalpel_desktop.tui import format as fmt
from scalpel_desktop.tui.data import DayPoint, Period, SavingsData
from scalpel_desktop.tui.screens.savings import (
    MIN_DAYS_SHOWN, STYLE_MONTH, STYLE_TODAY, STYLE_WEEK, SavingsView, card, shown_days,
)
from scalpel_desktop.tui.widgets.barchart import Bar, BarChart, render_chart
from tests.tui.helpers import host, settle, text_of

pytestmark = pytest.mark.anyio
START = datetime(2026, 11, 1).timestamp()
NOW = START + 29 * 86400 + 3600


def days(values: list[int]) -> tuple[DayPoint, ...]:
    return tuple(DayPoint(datetime.fromtimestamp(START + i * 86400).strftime("%Y-%m-%d"), START + i * 86400, v)
                 for i, v in enumerate(values))


PERIODS = (Period("Today", NOW - 3600, 1, 40, 10, 12_345, 0.5, 20_000, 0.9, 2.0, 400_000, 380_000),
           Period("7 days", NOW - 6 * 86400, 7, 300, 80, 99_000, 3.25, 150_000, 5.0, 20.0),
           Period("30 days", START, 30, 900, 200, 250_000, 9.75, 400_000, 14.0, 60.0))


def test_a_card_is_one_figure_a_line_and_fits_a_third_of_80_columns():
    text = card(PERIODS[0]).plain.split("\n")
    assert text == ["Today", "12,345 tokens saved", "$0.50 (20% of bill)", "10 of 40 changed", "spent $2.00  cache 95%"]
    assert all(len(line) <= 80 // 3 - 2 for line in text)  # a card's border and padding take the rest
    nothing = card(Period("Today", NOW, 1)).plain.split("\n")
    assert nothing[2] == "$0.00" and nothing[4] == "spent $0.00  cache —"  # no share of a bill of nothing


def test_the_chart_starts_at_the_first_day_with_savings_and_shows_at_least_a_week():
    assert len(shown_days(days([0] * 10 + [1] + [0] * 19))) == 20
    assert len(shown_days(days([3] + [0] * 29))) == 30
    assert len(shown_days(days([0] * 30))) == MIN_DAYS_SHOWN  # nothing saved yet: the last week, empty
    assert shown_days(days([0, 2])) == days([0, 2])  # fewer days than a week: all of them
    assert shown_days(()) == ()


def test_one_day_of_savings_reads_as_a_week_with_labelled_bars():
    days = tuple(DayPoint(f"2026-11-{d:02d}", float(d), 0) for d in range(1, 31))
    days = days[:-1] + (DayPoint("2026-11-30", 30.0, 72_918),)
    shown = shown_days(days)
    assert [p.day[-2:] for p in shown] == ["24", "25", "26", "27", "28", "29", "30"]
    for width in (76, 96, 116):
        lines = render_chart([Bar(p.day[-2:], p.realized_tokens, "") for p in shown], 10, fmt.tokens_short,
                             width=width).plain.splitlines()
        assert all(len(ln) <= width for ln in lines)
        assert lines[-1].split() == ["24", "25", "26", "27", "28", "29", "30"]  # every day labelled, whole
        assert lines[0].startswith("73k") and lines[0].rstrip().endswith("█")  # the bar is tall and wide
    thirty = render_chart([Bar(p.day[-2:], p.realized_tokens + 1, "") for p in days], 10, fmt.tokens_short,
                          width=76).plain.splitlines()
    assert all(len(ln) <= 76 for ln in thirty) and "30" in thirty[-1].split()


async def test_the_tab_draws_the_cards_the_chart_and_the_notes():
    app = host(lambda: SavingsView(id="savings"))
    values = [0] * 12 + [i * 1000 for i in range(1, 19)]
    data = SavingsData(NOW, PERIODS, days(values), prices_as_of="2026-10-01", projected_weight="cache model",
                       assumed_prices={"claude-new-1": "sonnet"})
    async with app.run_test(size=(80, 24)) as pilot:
        view = app.query_one("#savings", SavingsView)
        view.show(data)
        await settle(pilot)
        for key, period in zip(("today", "week", "month"), PERIODS):
            assert text_of(app, f"#savings-{key}") == card(period).plain
        bars = app.query_one("#savings-chart", BarChart).bars
        assert [b.label for b in bars] == [f"{d:02d}" for d in range(13, 31)]
        assert [b.value for b in bars] == [float(v) for v in values[12:]]
        assert bars[-1].style == STYLE_TODAY and {b.style for b in bars[-7:-1]} == {STYLE_WEEK}
        assert {b.style for b in bars[:-7]} == {STYLE_MONTH}
        assert "since Nov 13" in text_of(app, "#savings-chart-title")
        notes = text_of(app, "#savings-notes")
        assert "30 days 400,000 tokens removed ≈ $14.00; weight: cache model." in notes
        assert "Prices as of 2026-10-01" in notes and "assumed prices: claude-new-1 as sonnet" in notes
        chart = app.query_one("#savings-chart", BarChart)
        assert chart.size.width <= 80 and all(len(line) <= chart.size.width for line in chart.render().plain.split("\n"))
        view.show(SavingsData(NOW, missing="no ledger at ~/x"))
        await settle(pilot)
        assert text_of(app, "#savings-notes") == "Nothing to show yet: no ledger at ~/x."
        assert text_of(app, "#savings-today") == card(PERIODS[0]).plain  # the last figures stay until there are new ones


async def test_no_assumed_prices_no_warning_and_no_days_no_bars():
    app = host(lambda: SavingsView(id="savings"))
    async with app.run_test(size=(80, 24)) as pilot:
        app.query_one("#savings", SavingsView).show(SavingsData(NOW, PERIODS, (), prices_as_of="2026-10-01"))
        await settle(pilot)
        assert "assumed prices" not in text_of(app, "#savings-notes")
        assert app.query_one("#savings-chart", BarChart).bars == ()
        assert text_of(app, "#savings-chart-title").startswith("Realized tokens saved per day  ")  # no "since "
        assert all(text_of(app, f"#savings-{k}") == card(p).plain for k, p in zip(("today", "week", "month"), PERIODS))


async def test_the_notes_show_the_risk_budget():
    from scalpel_desktop.tui.screens.savings import budget_line

    budget = {"saved_usd": 0.5, "staked_usd": 0.125, "balance_usd": 0.375, "bets": 1, "bets_lost_usd": 0.02}
    assert budget_line(budget).plain == ("Risk budget: saved $0.50, staked $0.12, left $0.38; "
                                         "30 days: 1 bet, lost $0.02")
    app = host(lambda: SavingsView(id="savings"))
    async with app.run_test(size=(80, 24)) as pilot:
        view = app.query_one("#savings", SavingsView)
        view.show(SavingsData(NOW, PERIODS, (), prices_as_of="2026-10-01", budget=dict(budget, bets=3)))
        await settle(pilot)
        assert "Risk budget: saved $0.50" in text_of(app, "#savings-notes")
        assert "3 bets, lost $0.02" in text_of(app, "#savings-notes")
        view.show(SavingsData(NOW, PERIODS, (), prices_as_of="2026-10-01"))  # an unread budget: no line
        await settle(pilot)
        assert "Risk budget" not in text_of(app, "#savings-notes")
