"""Cache misses: what re-wrote the prompt cache, why, and what it cost, by cause and by session.

A miss is often the largest avoidable cost on a bill (issue 24) and the user
can act on most of its causes (a long pause, a model switch, a tool list that
changes), so the dashboard shows them next to the savings: the period's misses
and their cost as a share of its bill, one line per cause (count, tokens
re-written, cost, share of the misses' cost) and one per session (misses,
cost, main cause), with the highlighted session's causes and what the
provider said. ``p`` cycles today / 7 days / 30 days; every period is read
at once (``views_data.load_misses``), so the switch needs no ledger read.
This module only formats: the figures come in a ``MissesData``.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import DataTable, Static

from scalpel_desktop.store.misses import SessionMisses
from scalpel_desktop.tui import format as fmt
from scalpel_desktop.tui.views_data import MISS_DEFAULT_PERIOD, MISS_PERIODS, MissesData, MissPeriod, project_name
from scalpel_desktop.tui.widgets.row_table import row_table

CAUSE_COLUMNS = (("cause", "Cause"), ("count", "Misses"), ("tokens", "Re-written"), ("cost", "Cost"),
                 ("share", "Share of miss cost"))
SESSION_COLUMNS = (("project", "Project"), ("session", "Session"), ("count", "Misses"), ("cost", "Cost"),
                   ("main", "Main cause"), ("title", "Title"))
TITLE_CELL = 28
CAUSE_STYLE = {"ttl-expired": "yellow", "unexplained": "magenta", "client-rewrite": "red",
               "tools-changed": "cyan", "model-switch": "cyan", "system-changed": "cyan",
               "settings-changed": "cyan", "lookback": "cyan"}


class MissesView(Vertical):
    """The Misses tab. ``show(data)`` replaces what is shown; ``p`` picks the period."""

    BINDINGS = [Binding("p", "next_period", "Period", show=True)]

    def __init__(self, **kw):
        super().__init__(**kw)
        self.period = MISS_DEFAULT_PERIOD
        self._data: MissesData | None = None
        self._sessions: dict[str, SessionMisses] = {}

    def compose(self) -> ComposeResult:
        yield Static("Reading the ledger…", id="misses-summary", classes="summary")
        yield row_table("misses-causes", CAUSE_COLUMNS)
        yield Static("By session", id="misses-sessions-title", classes="subtitle")
        yield row_table("misses-sessions", SESSION_COLUMNS)
        yield Static("", id="misses-detail", classes="detail")

    def action_next_period(self) -> None:
        self.period = (self.period + 1) % len(MISS_PERIODS)
        if self._data is not None:
            self.show(self._data)

    @property
    def shown(self) -> MissPeriod | None:
        """The period on screen (None before the first figures)."""
        data = self._data
        return data.periods[self.period] if data is not None and data.periods else None

    def show(self, data: MissesData) -> None:
        summary = self.query_one("#misses-summary", Static)
        if data.missing:  # the last figures stay until there are new ones (a locked ledger is passing)
            summary.update(f"Nothing to show yet: {data.missing}.")
            return
        self._data = data
        p = self.shown
        if p is None:
            return
        summary.update(summary_text(p, self.period))
        causes = self.query_one("#misses-causes", DataTable)
        causes.clear()
        for c in p.causes:
            causes.add_row(Text(c.cause, style=CAUSE_STYLE.get(c.cause, "")),
                           Text(f"{c.count:,}", justify="right"),
                           Text(fmt.tokens(c.tokens_rewritten), justify="right"),
                           Text(fmt.usd(c.cost_usd), justify="right"),
                           share_cell(p.share(c.cost_usd)), key=c.cause)
        table = self.query_one("#misses-sessions", DataTable)
        cursor = table.cursor_row
        table.clear()
        from scalpel_desktop.textable import unique_prefixes

        ids = [s.session for s in p.sessions]
        short = unique_prefixes(ids, ids, 8)
        self._sessions = {s.session: s for s in p.sessions}
        for s in p.sessions:
            table.add_row(*session_cells(s, data, short[s.session]), key=s.session)
        if p.sessions:
            table.move_cursor(row=min(cursor, len(p.sessions) - 1))
        self.query_one("#misses-sessions-title", Static).update(Text.assemble(
            ("By session", "bold"), (f" ({len(p.sessions)}, costliest first; `scalpel misses --session ID` "
                                     "lists them)" if p.sessions else "", "dim")))
        self._detail(p.sessions[table.cursor_row] if p.sessions else None)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.data_table.id != "misses-sessions":
            return
        key = event.row_key.value if event.row_key is not None else None
        self._detail(self._sessions.get(key))

    def _detail(self, s: SessionMisses | None) -> None:
        detail = self.query_one("#misses-detail", Static)
        data = self._data
        if s is None or data is None:
            detail.update("")
            return
        causes = ", ".join(f"{c.cause} {c.count} ({fmt.usd(c.cost_usd)})" for c in s.causes)
        provider = ", ".join(f"{r} {n}" for r, n in s.provider) or "not asked (setting cache_diagnostics)"
        title = data.names.title.get(s.session, "")
        detail.update(Text.assemble(
            (s.session, "bold"), ("  ", ""), (title, "italic"), "\n",
            (f"{fmt.tokens(s.tokens_rewritten)} tokens re-written: ", "dim"), causes, "\n",
            ("The provider said ", "dim"), provider))


def summary_text(p: MissPeriod, index: int) -> Text:
    """The period's misses in one or two lines, and which periods ``p`` cycles through."""
    choices = Text(" (p: ", style="dim")
    for i, (label, _) in enumerate(MISS_PERIODS):
        choices.append(label.lower(), style="bold reverse" if i == index else "dim")
        choices.append(" / " if i < len(MISS_PERIODS) - 1 else ")", style="dim")
    head = Text.assemble((p.label, "bold"))
    if not p.count:
        return head + Text(": no cache miss, nothing re-written") + choices
    share = f", {fmt.pct(p.bill_share)} of the bill ({fmt.usd(p.bill_usd)})" if p.bill_share is not None else ""
    return head + Text.assemble(
        ": ", (f"{p.count:,}", "bold"), f" miss{'' if p.count == 1 else 'es'} re-wrote ",
        (fmt.tokens(p.tokens_rewritten), "bold"), " tokens, ", (fmt.usd(p.cost_usd), "bold yellow"),
        share) + choices


def share_cell(share: float | None) -> Text:
    return Text.assemble((fmt.bar(share, 10), "yellow"), f" {fmt.pct(share):>4}")


def session_cells(s: SessionMisses, data: MissesData, short: str) -> tuple:
    project = data.names.project.get(s.session, "")
    title = data.names.title.get(s.session, "")
    main = s.main_cause
    return (
        Text(project_name(project) if project else "?", style="bold"),
        short,
        Text(f"{s.count:,}", justify="right"),
        Text(fmt.usd(s.cost_usd), justify="right"),
        Text(main, style=CAUSE_STYLE.get(main, "")),
        fmt.clip(title, TITLE_CELL) if title else Text("—", style="dim"),
    )
