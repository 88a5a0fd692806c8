"""Live sessions by project and title: context now and as a share of the window, cost, what cache
misses cost it, cache share, turns, last decision; and the highlighted session's context breakdown
(like ``/context``)."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import DataTable, Static

from scalpel_desktop.decisions import changes_of
from scalpel_desktop.tui import format as fmt
from scalpel_desktop.tui.data import ACTIVE_S, SessionRow, SessionsData
from scalpel_desktop.tui.widgets.row_table import row_table
from scalpel_desktop.tui.widgets.context_bars import ContextBars

# What a session cost and what scalpel saved it sit side by side, before the wide columns, so the
# saving is on screen from 80 columns up (at its old place, last, it was off screen even at 120);
# what its cache misses cost follows them (the Misses tab has why).
COLUMNS = (
    ("project", "Project"),
    ("session", "Session"),
    ("title", "Title"),
    ("cost", "Cost"),
    ("realized", "Saved"),
    ("misses", "Misses"),
    ("context", "Context now"),
    ("share", "Share of window"),
    ("cache", "Cache"),
    ("turns", "Turns"),
    ("model", "Model"),
    ("decision", "Last decision"),
    ("seen", "Last request"),
)
TITLE_CELL = 22  # with it, the Misses column ends inside 80 columns


class SessionsView(Vertical):
    """The first tab. ``show(data)`` replaces what is shown."""

    def compose(self) -> ComposeResult:
        yield Static("Reading the ledger…", id="sessions-summary", classes="summary")
        yield row_table("sessions-table", COLUMNS)
        with Horizontal(id="sessions-bottom"):
            yield Static("", id="sessions-detail", classes="detail")
            yield ContextBars(id="sessions-context")

    def show(self, data: SessionsData) -> None:
        summary = self.query_one("#sessions-summary", Static)
        table = self.query_one("#sessions-table", DataTable)
        if data.missing:
            summary.update(f"Nothing to show yet: {data.missing}.")
        else:
            summary.update(Text.assemble(
                (f"{len(data.rows)}", "bold"), " session(s) seen in the last 24 h, ",
                (f"{data.active}", "bold"), f" active (a request in the last {int(ACTIVE_S // 60)} min) · ",
                (f"{data.requests_today:,}", "bold"), " request(s) ",
                # count_tokens calls are not requests (ledger_queries._REQUEST): apart, never in the count
                (f"(+{data.side_calls_today:,} count_tokens) " if data.side_calls_today else "", "dim"),
                "today, saved ",
                (f"{data.saved_tokens_today:,}", "bold"), " tokens (", (fmt.usd(data.saved_usd_today), "bold"),
                ") today"))
        cursor = table.cursor_row
        table.clear()
        from scalpel_desktop.textable import unique_prefixes

        self._contexts = data.contexts
        short = unique_prefixes([r.session for r in data.rows], [r.session for r in data.rows], 8)
        for row in data.rows:
            table.add_row(*cells(row, data.now, short[row.session]), key=row.session)
        if data.rows:
            table.move_cursor(row=min(cursor, len(data.rows) - 1))
        self._rows = {r.session: r for r in data.rows}
        self._detail(data.rows[table.cursor_row] if data.rows else None)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        rows = getattr(self, "_rows", {})
        key = event.row_key.value if event.row_key is not None else None
        self._detail(rows.get(key))

    def _detail(self, row: SessionRow | None) -> None:
        detail = self.query_one("#sessions-detail", Static)
        bars = self.query_one("#sessions-context", ContextBars)
        if row is None:
            detail.update("")
            bars.show(None)
            return
        bars.show(getattr(self, "_contexts", {}).get(row.session))
        ctx = "unknown" if row.context_tokens is None else (
            f"{fmt.tokens(row.context_tokens)} tokens "
            f"({'provider usage counts' if row.context_source == 'usage' else 'proxy estimate, no usage counts'})")
        detail.update(Text.assemble(
            (row.name, "bold"), ("  ", ""), (row.title or "(no title: no transcript on disk)", "italic"), "\n",
            ("Project ", "dim"), row.project or "not stated", "\n",
            ("Session", "dim"), "\n", (row.session, "bold"), "\n",
            ("Model ", "dim"), row.model or "?", ("  window ", "dim"), f"{fmt.tokens(row.window)}", "\n",
            ("Cost ", "dim"), (fmt.usd(row.cost_usd), "bold"), ("  realized saved ", "dim"),
            f"{fmt.tokens(row.realized_tokens)} tokens ({fmt.usd(row.realized_usd)})", "\n",
            ("Cache misses ", "dim"), miss_text(row), "\n",
            ("Context now ", "dim"), ctx, "\n",
            ("Cache share ", "dim"), f"{fmt.pct(row.cache_share)} over the last {row.cache_requests} request(s)",
            "\n", ("Turns ", "dim"), f"{row.turns}", ("  sub-agent requests ", "dim"), f"{row.subagent_requests}",
            "\n", ("Last decision ", "dim"), f"{row.last_decision or '—'}", ("  why: ", "dim"),
            row.last_reason or "—"))


def cells(row: SessionRow, now: float, short: str | None = None) -> tuple:
    share = row.share
    share_style = "red" if share is not None and share >= 0.8 else ("yellow" if share is not None and share >= 0.5
                                                                   else "green")
    marker = Text("● ", style="green") if row.active else Text("○ ", style="dim")
    ctx = fmt.tokens(row.context_tokens) + ("~" if row.context_source == "estimate" else "")
    return (
        marker + Text(row.name, style="bold"),
        short or row.session,
        fmt.clip(row.title, TITLE_CELL) if row.title else Text("—", style="dim"),
        Text(fmt.usd(row.cost_usd), justify="right"),
        Text(fmt.tokens(row.realized_tokens), justify="right"),
        Text(fmt.usd(row.miss_usd), justify="right", style="yellow") if row.misses else Text("—", style="dim",
                                                                                            justify="right"),
        Text(ctx, justify="right"),
        Text.assemble((fmt.bar(share, 10), share_style), f" {fmt.pct(share):>4}"),
        Text(fmt.pct(row.cache_share), justify="right"),
        Text(str(row.turns), justify="right"),
        fmt.short_model(row.model),
        Text(row.last_decision or "—", style=decision_style(row.last_decision)),
        fmt.age(now - row.last_ts),
    )


def miss_text(row: SessionRow) -> str:
    """``3, $0.42 of cache re-writes (7: why)``, or ``none``."""
    if not row.misses:
        return "none"
    return f"{row.misses}, {fmt.usd(row.miss_usd)} of cache re-writes (7: why)"


def decision_style(decision: str) -> str:
    """A decision's colour: by its most telling change (``cut+filtered`` shows as a cut)."""
    changes = changes_of(decision)
    for change, style in (("cut", "bold green"), ("replayed", "green"), ("filtered", "bold cyan")):
        if change in changes:
            return style
    return {"error": "bold red", "paused": "yellow", "skipped": "magenta"}.get(decision or "", "")
