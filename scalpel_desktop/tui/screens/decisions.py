"""Decisions log: what the pipeline did to requests, and every cut (what, why, size, spill file)."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import DataTable, Static

from scalpel_desktop.tui import format as fmt
from scalpel_desktop.tui.data import CutRow, DecisionRow, DecisionsData
from scalpel_desktop.tui.messages import ReloadRequested
from scalpel_desktop.tui.screens.sessions import decision_style
from scalpel_desktop.tui.widgets.row_table import row_table

KIND_WHY = {
    "superseded_read": "superseded read (the file was read again later)",
    "duplicate": "duplicate of a later identical result",
    "failed": "failed command, long past",
    "dead_snapshot": "dead snapshot (replaced by a newer one)",
    "stale_large": "stale large result",
}


class DecisionsView(Vertical):
    BINDINGS = [Binding("a", "toggle_unchanged", "All/changed", show=True)]

    def __init__(self, **kw):
        super().__init__(**kw)
        self.include_unchanged = False
        self._cuts: dict[str, CutRow] = {}
        self._decisions: dict[str, DecisionRow] = {}

    def compose(self) -> ComposeResult:
        yield Static("Requests", id="decisions-summary", classes="summary")
        yield row_table("decisions-table", (("time", "Time"), ("session", "Session"), ("model", "Model"),
                                            ("decision", "Decision"), ("removed", "Removed (est.)"),
                                            ("realized", "Realized"), ("reason", "Why")))
        yield Static("Cuts (surgery log): each removed tool result, kept whole in a spill file",
                     id="cuts-title", classes="subtitle")
        yield row_table("cuts-table", (("time", "Time"), ("session", "Session"), ("tool", "Tool"), ("kind", "Why"),
                                       ("tokens", "Size (tokens)"), ("spill", "Spill file")))
        yield Static("", id="cut-detail", classes="detail")

    def action_toggle_unchanged(self) -> None:
        self.include_unchanged = not self.include_unchanged
        self.post_message(ReloadRequested("decisions"))

    def show(self, data: DecisionsData) -> None:
        summary = self.query_one("#decisions-summary", Static)
        if data.missing:
            summary.update(f"Nothing to show yet: {data.missing}.")
            return
        counts = " · ".join(f"{k} {v:,}" for k, v in sorted(data.counts.items(), key=lambda kv: -kv[1]))
        shown = ("All requests", " (a: changed only)") if data.include_unchanged else (
            "Changed, refused or failed requests", " (a: all)")
        # Short: at 80x24 this summary and both tables share 19 lines. count_tokens calls are no requests.
        side = "".join(f" · {endpoint} {n:,} (not requests)" for endpoint, n in data.side_calls.items())
        summary.update(Text.assemble((shown[0], "bold"), shown[1], " · all time: ", (counts or "none", "dim"),
                                     (side, "dim")))
        table = self.query_one("#decisions-table", DataTable)
        cursor = table.cursor_row
        table.clear()
        self._decisions = {str(d.id): d for d in data.decisions}
        for d in data.decisions:
            table.add_row(
                fmt.day_time(d.ts), fmt.short_id(d.session, 8), fmt.short_model(d.model),
                Text(d.decision, style=decision_style(d.decision)),
                Text(fmt.tokens(d.tokens_removed) if d.tokens_removed else "", justify="right"),
                Text(fmt.tokens(d.realized_tokens) if d.realized_tokens is not None else "", justify="right"),
                fmt.clip(d.reason, 52), key=str(d.id))
        if data.decisions:
            table.move_cursor(row=min(cursor, len(data.decisions) - 1))
        cuts = self.query_one("#cuts-table", DataTable)
        cursor = cuts.cursor_row
        cuts.clear()
        self._cuts = {c.tool_use_id: c for c in data.cuts}
        for c in data.cuts:
            cuts.add_row(fmt.day_time(c.created_at), fmt.short_id(c.session, 8), c.tool or "?", c.kind,
                         Text(fmt.tokens(c.tokens), justify="right"), spill_cell(c), key=c.tool_use_id)
        if data.cuts:
            cuts.move_cursor(row=min(cursor, len(data.cuts) - 1))
            self._detail(data.cuts[cuts.cursor_row])
        else:
            self._detail(None)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key is None:
            return
        if event.data_table.id == "cuts-table":
            self._detail(self._cuts.get(event.row_key.value))
        elif event.data_table.has_focus:
            self._decision_detail(self._decisions.get(event.row_key.value))

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        """Tab to the other table: the detail follows its highlighted row."""
        table = event.widget
        if not isinstance(table, DataTable) or table.row_count == 0:
            return
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        if table.id == "cuts-table":
            self._detail(self._cuts.get(key))
        elif table.id == "decisions-table":
            self._decision_detail(self._decisions.get(key))

    def _decision_detail(self, d: DecisionRow | None) -> None:
        if d is None:
            return
        realized = "" if d.realized_tokens is None else (
            f"  ·  realized {fmt.tokens(d.realized_tokens)} tokens ({fmt.usd(d.realized_usd)})")
        self.query_one("#cut-detail", Static).update(Text.assemble(
            ("Request ", "dim"), f"#{d.id} at {fmt.day_time(d.ts)}", ("  session ", "dim"), d.session,
            ("  model ", "dim"), d.model, (f"  status {d.status}" if d.status else "", "dim"), "\n",
            ("Decision ", "dim"), (d.decision, decision_style(d.decision)),
            (f"  ·  removed {fmt.tokens(d.tokens_removed)} tokens (estimate)" if d.tokens_removed else ""), realized,
            "\n", ("Why ", "dim"), d.reason or "—"))

    def _detail(self, c: CutRow | None) -> None:
        detail = self.query_one("#cut-detail", Static)
        if c is None:
            detail.update("No cuts recorded yet.")
            return
        from scalpel_desktop.paths import home_relative

        shown = home_relative(Path(c.spill_path)) if c.spill_path else "?"
        link = Path(c.spill_path).as_uri() if c.spill_path else ""
        # What to do next first (the command that shows the original), the long spill path last:
        # on a short screen the detail is capped and scrolls, and the path is what may need it.
        detail.update(Text.assemble(
            ("Cut ", "dim"), (c.tool_use_id, "bold"), (" of ", "dim"), c.tool or "an unrecorded tool",
            ("  ·  size ", "dim"), f"{fmt.tokens(c.tokens)} tokens",
            ("  ·  scalpel spill show " + c.sha256[:12], "dim"), "\n",
            ("Why ", "dim"), KIND_WHY.get(c.kind, c.kind), "\n",
            ("Session ", "dim"), c.session, "\n",
            ("Original ", "dim"), (shown, f"link {link}" if link else ""),
            (f"  ({fmt.size_bytes(c.spill_bytes)})" if c.spill_bytes is not None else "  (spill file gone)", "dim")))


def spill_cell(c: CutRow) -> Text:
    if not c.sha256:
        return Text("?", style="red")
    label = f"spill/{c.sha256[:2]}/{c.sha256[:10]}…"
    if c.spill_bytes is None:
        return Text(label + " (gone)", style="dim strike")
    return Text(label + f" {fmt.size_bytes(c.spill_bytes)}")
