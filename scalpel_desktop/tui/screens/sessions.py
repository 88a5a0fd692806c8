"""Live sessions: context size now and as a share of the window, cache share, turns, last decision."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import DataTable, Static

from scalpel_desktop.decisions import changes_of
from scalpel_desktop.tui import format as fmt
from scalpel_desktop.tui.data import ACTIVE_S, SessionRow, SessionsData

COLUMNS = (
    ("session", "Session"),
    ("model", "Model"),
    ("context", "Context now"),
    ("share", "Share of window"),
    ("cache", "Cache"),
    ("turns", "Turns"),
    ("decision", "Last decision"),
    ("seen", "Last request"),
    ("realized", "Realized"),
)


class SessionsView(Vertical):
    """The first tab. ``show(data)`` replaces what is shown."""

    def compose(self) -> ComposeResult:
        yield Static("Reading the ledger…", id="sessions-summary", classes="summary")
        table: DataTable = DataTable(id="sessions-table", cursor_type="row", zebra_stripes=True)
        for key, label in COLUMNS:
            table.add_column(label, key=key)
        yield table
        yield Static("", id="sessions-detail", classes="detail")

    def show(self, data: SessionsData) -> None:
        summary = self.query_one("#sessions-summary", Static)
        table = self.query_one("#sessions-table", DataTable)
        if data.missing:
            summary.update(f"Nothing to show yet: {data.missing}.")
        else:
            summary.update(Text.assemble(
                (f"{len(data.rows)}", "bold"), " session(s) seen in the last 24 h, ",
                (f"{data.active}", "bold"), f" active (a request in the last {int(ACTIVE_S // 60)} min) · ",
                (f"{data.requests_today:,}", "bold"), " request(s) today, saved ",
                (f"{data.saved_tokens_today:,}", "bold"), " tokens (", (fmt.usd(data.saved_usd_today), "bold"),
                ") today"))
        cursor = table.cursor_row
        table.clear()
        for row in data.rows:
            table.add_row(*cells(row, data.now), key=row.session)
        if data.rows:
            table.move_cursor(row=min(cursor, len(data.rows) - 1))
        self._detail(data.rows[table.cursor_row] if data.rows else None)
        self._rows = {r.session: r for r in data.rows}

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        rows = getattr(self, "_rows", {})
        key = event.row_key.value if event.row_key is not None else None
        self._detail(rows.get(key))

    def _detail(self, row: SessionRow | None) -> None:
        detail = self.query_one("#sessions-detail", Static)
        if row is None:
            detail.update("")
            return
        ctx = "unknown" if row.context_tokens is None else (
            f"{fmt.tokens(row.context_tokens)} tokens "
            f"({'provider usage counts' if row.context_source == 'usage' else 'proxy estimate, no usage counts'})")
        detail.update(Text.assemble(
            ("Session ", "dim"), (row.session, "bold"), ("  model ", "dim"), row.model or "?",
            ("  window ", "dim"), f"{fmt.tokens(row.window)}", "\n",
            ("Context now ", "dim"), ctx, ("  ·  cache share over ", "dim"),
            f"the last {row.cache_requests} request(s) with usage: {fmt.pct(row.cache_share)}",
            "\n", ("Turns ", "dim"), f"{row.turns} main-agent request(s)", ("  ·  sub-agent requests ", "dim"),
            f"{row.subagent_requests}", ("  ·  realized ", "dim"),
            f"{fmt.tokens(row.realized_tokens)} tokens ({fmt.usd(row.realized_usd)})", "\n",
            ("Last decision ", "dim"), f"{row.last_decision or '—'}", ("  why: ", "dim"), row.last_reason or "—"))


def cells(row: SessionRow, now: float) -> tuple:
    share = row.share
    share_style = "red" if share is not None and share >= 0.8 else ("yellow" if share is not None and share >= 0.5
                                                                   else "green")
    marker = Text("● ", style="green") if row.active else Text("○ ", style="dim")
    ctx = fmt.tokens(row.context_tokens) + ("~" if row.context_source == "estimate" else "")
    return (
        marker + Text(fmt.short_id(row.session, 8)),
        fmt.short_model(row.model),
        Text(ctx, justify="right"),
        Text.assemble((fmt.bar(share, 10), share_style), f" {fmt.pct(share):>4}"),
        Text(fmt.pct(row.cache_share), justify="right"),
        Text(str(row.turns), justify="right"),
        Text(row.last_decision or "—", style=decision_style(row.last_decision)),
        fmt.age(now - row.last_ts),
        Text(fmt.tokens(row.realized_tokens), justify="right"),
    )


def decision_style(decision: str) -> str:
    """A decision's colour: by its most telling change (``cut+filtered`` shows as a cut)."""
    changes = changes_of(decision)
    for change, style in (("cut", "bold green"), ("replayed", "green"), ("filtered", "bold cyan")):
        if change in changes:
            return style
    return {"error": "bold red", "paused": "yellow", "skipped": "magenta"}.get(decision or "", "")
