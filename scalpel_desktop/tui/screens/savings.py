"""Savings over time: realized (from usage counts of changed requests), today / 7 days / 30 days."""

from __future__ import annotations

from datetime import datetime

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Static

from scalpel_desktop.tui import format as fmt
from scalpel_desktop.tui.data import Period, SavingsData
from scalpel_desktop.tui.widgets.barchart import Bar, BarChart

STYLE_TODAY = "bold #f5c542"
STYLE_WEEK = "#3fb950"
STYLE_MONTH = "#4a8fe7"
CHART_TITLE = "Realized tokens saved per day, last 30 days"


class SavingsView(Vertical):
    """The second tab: three period cards and a 30-day chart of realized tokens per day."""

    def compose(self) -> ComposeResult:
        with Horizontal(id="savings-cards"):
            for key, title in (("today", "Today"), ("week", "7 days"), ("month", "30 days")):
                yield Static(title, id=f"savings-{key}", classes="card")
        yield Static(CHART_TITLE, id="savings-chart-title", classes="subtitle")
        yield BarChart(fmt.tokens_short, id="savings-chart")
        yield Static("", id="savings-notes", classes="detail")

    def show(self, data: SavingsData) -> None:
        if data.missing:  # the last figures stay until there are new ones (a locked ledger is passing)
            self.query_one("#savings-notes", Static).update(f"Nothing to show yet: {data.missing}.")
            return
        for key, period in zip(("today", "week", "month"), data.periods):
            self.query_one(f"#savings-{key}", Static).update(card(period))
        bars = []
        days = shown_days(data.days)
        for i, p in enumerate(days):
            age = len(days) - 1 - i
            style = STYLE_TODAY if age == 0 else (STYLE_WEEK if age < 7 else STYLE_MONTH)
            bars.append(Bar(p.day[-2:], float(p.realized_tokens), style))
        self.query_one("#savings-chart", BarChart).set_bars(bars)
        since = f" since {datetime.fromtimestamp(days[0].start).strftime('%b %d')}" if days else ""
        self.query_one("#savings-chart-title", Static).update(Text.assemble(
            "Realized tokens saved per day", since, "  ",
            ("██", STYLE_TODAY), " today  ", ("██", STYLE_WEEK), " last 7 days  ", ("██", STYLE_MONTH),
            " older"))
        month = data.periods[-1]
        notes = Text.assemble(
            ("Realized", "bold"), " = from the provider's usage counts of requests scalpel changed, priced at the tier "
            "each removed token would have been billed at. ",
            ("Projected", "bold"), " (estimate, not in the figures above): 30 days "
            f"{fmt.tokens(month.projected_tokens)} tokens removed ≈ {fmt.usd(month.projected_usd)}; "
            f"weight: {data.projected_weight}.\n",
            ("Prices as of ", "dim"), data.prices_as_of or "?")
        if data.budget is not None:
            notes.append("\n")
            notes.append(budget_line(data.budget))
        if data.assumed_prices:
            notes.append("  · assumed prices: " + ", ".join(f"{m} as {f}" for m, f in data.assumed_prices.items()),
                         style="yellow")
        self.query_one("#savings-notes", Static).update(notes)


MIN_DAYS_SHOWN = 7


def budget_line(b: dict) -> Text:
    """The risk budget in one line: what the cuts surely saved, what the bets staked, what is left
    for the next ones, and what the closed bets of the last 30 days did not earn back."""
    bets = b.get("bets", 0)
    return Text.assemble(
        ("Risk budget", "bold"), f": saved {fmt.usd(b['saved_usd'])}, staked {fmt.usd(b['staked_usd'])}, "
        f"left {fmt.usd(b['balance_usd'])}; 30 days: {bets} bet{'' if bets == 1 else 's'}, "
        f"lost {fmt.usd(b['bets_lost_usd'])}")


def shown_days(days):
    """The days the chart draws: from the first day with savings (at least the last week), so a
    new user's one day of data is not one sliver at the edge of 30 empty days."""
    first = next((i for i, p in enumerate(days) if p.realized_tokens), len(days))
    return tuple(days[min(first, max(0, len(days) - MIN_DAYS_SHOWN)):])


def card(p: Period) -> Text:
    """One period, one figure a line (fits a third of an 80-column terminal)."""
    share = (p.realized_usd / (p.cost_usd + p.realized_usd)) if (p.cost_usd + p.realized_usd) > 0 else None
    return Text.assemble(
        (p.label, "bold"), "\n",
        (f"{fmt.tokens(p.realized_tokens)}", "bold green"), (" tokens saved", "dim"), "\n",
        (fmt.usd(p.realized_usd), "bold green"), (f" ({fmt.pct(share)} of bill)" if share is not None else "", "dim"),
        "\n", f"{p.changed_requests:,} of {p.requests:,}", (" changed", "dim"), "\n",
        ("spent ", "dim"), fmt.usd(p.cost_usd), ("  cache ", "dim"), fmt.pct(p.cache_share),
    )
