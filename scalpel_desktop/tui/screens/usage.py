"""Usage and cost, ccusage-style: the active 5-hour block with its burn rate, cost per day as bars,
and daily, monthly and 5-hour block tables (input, output, cache write, cache read, total, cost)."""

from __future__ import annotations

from datetime import datetime

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Static

from scalpel_desktop.tui import format as fmt
from scalpel_desktop.tui.views_data import UsageData
from scalpel_desktop.tui.widgets.row_table import row_table
from scalpel_desktop.tui.widgets.barchart import Bar, BarChart

TALLY_COLUMNS = (("input", "Input"), ("output", "Output"), ("cache_write", "Cache write"),
                 ("cache_read", "Cache read"), ("total", "Total tokens"), ("cost", "Cost"))
STYLE_COST = "#4a8fe7"
STYLE_TODAY = "bold #f5c542"


def tally_cells(t) -> list[Text]:
    return [Text(fmt.tokens(v), justify="right") for v in (t.input, t.output, t.cache_write, t.cache_read,
                                                           t.total_tokens)] + [Text(fmt.usd(t.cost_usd),
                                                                                    justify="right")]


def tally_table(table_id: str, first: tuple[str, str]) -> DataTable:
    """A table of tallies (tokens by tier and cost), its first column naming the period."""
    return row_table(table_id, (first, *TALLY_COLUMNS))


class UsageView(VerticalScroll):
    """The Usage tab. ``show(data)`` replaces what is shown."""

    def compose(self) -> ComposeResult:
        yield Static("Reading the ledger…", id="usage-block", classes="summary")
        yield Static("Cost per day", id="usage-chart-title", classes="subtitle")
        yield BarChart(fmt.usd, id="usage-chart")
        yield Static("Daily", classes="subtitle")
        yield tally_table("usage-daily", ("date", "Date"))
        yield Static("Monthly", classes="subtitle")
        yield tally_table("usage-monthly", ("month", "Month"))
        yield Static("5-hour blocks (last 3 days)", classes="subtitle")
        yield row_table("usage-blocks", (("start", "Block start"), ("state", "State"), ("requests", "Requests"),
                                         ("total", "Total tokens"), ("cost", "Cost"), ("burn", "Tokens/min"),
                                         ("rate", "$/hour"), ("projected", "Projected total")))
        yield Static("", id="usage-notes", classes="detail")

    def show(self, data: UsageData) -> None:
        head = self.query_one("#usage-block", Static)
        if data.missing:
            head.update(f"Nothing to show yet: {data.missing}.")
            return
        head.update(block_text(data))
        today = datetime.fromtimestamp(data.now).strftime("%Y-%m-%d")
        self.query_one("#usage-chart", BarChart).set_bars(
            [Bar(t.key[-2:], t.cost_usd, STYLE_TODAY if t.key == today else STYLE_COST) for t in data.days])
        first = data.days[0].key if data.days else ""
        self.query_one("#usage-chart-title", Static).update(Text.assemble(
            ("Cost per day", "bold"), (f" since {first} (days with requests)" if first else "", "dim"), "  ",
            ("██", STYLE_TODAY), " today"))
        for table_id, tallies in (("#usage-daily", data.days[::-1]), ("#usage-monthly", data.months[::-1])):
            table = self.query_one(table_id, DataTable)
            table.clear()
            for t in tallies:
                table.add_row(t.key, *tally_cells(t), key=t.key)
        blocks = self.query_one("#usage-blocks", DataTable)
        blocks.clear()
        for b in data.blocks[::-1]:
            blocks.add_row(
                b.tally.key, Text("active", style="bold green") if b.active else Text("ended", style="dim"),
                Text(f"{b.tally.requests:,}", justify="right"), Text(fmt.tokens(b.tally.total_tokens), justify="right"),
                Text(fmt.usd(b.tally.cost_usd), justify="right"),
                Text(f"{b.tokens_per_min:,.0f}" if b.tokens_per_min is not None else "", justify="right"),
                Text(fmt.usd(b.usd_per_hour) if b.usd_per_hour is not None else "", justify="right"),
                Text(f"{fmt.tokens(b.projected_tokens)} ≈ {fmt.usd(b.projected_usd)} (projection)"
                     if b.projected_tokens is not None else "", justify="right"),
                key=str(b.start))
        self.query_one("#usage-notes", Static).update(Text.assemble(
            ("Cost", "bold"), " = the provider's usage counts priced at the dated price table (as of ",
            data.prices_as_of or "?", "), as in `scalpel report`. Days and months are local. A 5-hour block "
            "starts at the hour of its first request; its burn rate runs from that request to now, and its ",
            ("projected", "italic"), " total assumes the same rate to the block's end."))


def block_text(data: UsageData) -> Text:
    b = data.active_block
    if b is None:
        last = data.blocks[-1] if data.blocks else None
        tail = f" (the last one started {last.tally.key})" if last else ""
        return Text.assemble(("No active 5-hour block", "bold"), tail)
    ends = datetime.fromtimestamp(b.end).strftime("%H:%M")
    return Text.assemble(
        ("Active block ", "bold"), f"since {datetime.fromtimestamp(b.start).strftime('%H:%M')}, ends {ends} · ",
        (fmt.tokens(b.tally.total_tokens), "bold"), " tokens, ", (fmt.usd(b.tally.cost_usd), "bold"), "\n",
        ("Burn rate ", "bold"), f"{b.tokens_per_min:,.0f} tokens/min · {fmt.usd(b.usd_per_hour)}/hour · ",
        ("projected ", "italic"), f"{fmt.tokens(b.projected_tokens)} tokens ≈ {fmt.usd(b.projected_usd)} by {ends}")
