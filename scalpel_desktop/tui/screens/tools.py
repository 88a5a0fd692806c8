"""Tools: the inventory, removal suggestions with their evidence, and a toggle per name.

Every toggle goes through the running proxy's control API (action ``tools``);
with no proxy the toggles are shown disabled, with the reason.
"""

from __future__ import annotations

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import DataTable, Label, Static, Switch

from scalpel_desktop.tui import format as fmt
from scalpel_desktop.tui.inventory import ToolsData
from scalpel_desktop.tui.messages import ControlRequested
from scalpel_desktop.tui.proxy import ProxyState
from scalpel_desktop.tui.widgets.row_table import row_table


def size_columns(table: DataTable) -> None:
    """Widen each auto-width column to its widest cell now.

    DataTable measures new rows only when it next goes idle; a dashboard kept
    busy by its polls could show these columns at their labels' widths ("[ ] ke")
    until then (seen in tests/tui/test_tmux_sizes.py). The widths set here are
    the ones that measurement would give, so it changes nothing when it runs.
    """
    for row_index in range(table.row_count):
        for column, cell in zip(table.ordered_columns, table.get_row_at(row_index)):
            width = cell.cell_len if isinstance(cell, Text) else Text(str(cell)).cell_len
            column.content_width = max(column.content_width, width)
    table.refresh()


class ToolsView(Vertical):
    BINDINGS = [
        Binding("space", "toggle_name", "Remove/restore", show=True),
        Binding("f", "force_remove", "Force remove", show=True),
    ]

    def __init__(self, **kw):
        super().__init__(**kw)
        self.data: ToolsData | None = None
        self.proxy: ProxyState | None = None

    def compose(self) -> ComposeResult:
        with Horizontal(id="tools-bar", classes="switch-row"):
            yield Switch(False, id="tool-filter-switch", disabled=True)
            yield Label("Tool filter for new sessions", classes="switch-label")
            yield Static("", id="tools-reason", classes="reason")
        yield Static("Inventory", id="tools-summary", classes="summary")
        yield row_table("tools-table", (("remove", "Filter"), ("name", "Name"), ("kind", "Kind"),
                                        ("tokens", "Tokens"), ("sessions", "Sess."), ("calls", "Calls"),
                                        ("status", "Removed by"), ("realized", "Realized")))
        yield Static("Suggestions", id="suggest-summary", classes="subtitle")
        yield row_table("suggest-table", (("name", "Name"), ("kind", "Kind"), ("tokens", "Tokens"),
                                          ("sessions", "Sess."), ("days", "Days"), ("calls", "Calls"),
                                          ("projected", "Projected / session"), ("note", "Note")))
        yield Static("", id="tools-detail", classes="detail")

    # -- data in -------------------------------------------------------------------
    def show(self, data: ToolsData) -> None:
        self.data = data
        summary = self.query_one("#tools-summary", Static)
        if data.missing:
            summary.update(f"Nothing to show yet: {data.missing}.")
            return
        summary.update(Text.assemble(
            ("Inventory ", "bold"), f"{len(data.tools)} names, {data.coverage_sessions} sessions · removal list: ",
            (", ".join(data.removals) or "empty", "bold"), " · realized by the filter: ",
            (f"{fmt.tokens(data.realized_tokens)} tokens", "green"), f" ({fmt.usd(data.realized_usd)})"))
        inv = self.query_one("#tools-table", DataTable)
        cursor = inv.cursor_row
        inv.clear()
        for t in data.tools:
            removed = t.removal is not None
            by = "" if not removed else (t.removal if t.removal != t.name else "itself") + (
                "" if data.tool_filter else " (filter off)")
            inv.add_row(
                Text("[x] remove" if removed else "[ ] keep", style="bold red" if removed else "dim"),
                t.name, t.kind, Text(fmt.tokens(t.tokens), justify="right"), Text(str(t.sessions), justify="right"),
                Text(str(t.calls), justify="right"), Text(by, style="red" if data.tool_filter else "yellow"),
                Text(fmt.tokens(t.realized_tokens) if t.realized_tokens else "", justify="right"), key=t.name)
        size_columns(inv)
        if data.tools:
            inv.move_cursor(row=min(cursor, len(data.tools) - 1))
        th = data.thresholds
        self.query_one("#suggest-summary", Static).update(Text.assemble(
            ("Suggestions ", "bold"), f"never called in ≥ {th.get('min_sessions', 0)} sessions over "
            f"≥ {th.get('min_days', 0):g} days (coverage: {data.coverage_sessions} sessions, "
            f"{data.coverage_days:g} days; {data.withheld} withheld) · ", ("projected", "italic")))
        sug = self.query_one("#suggest-table", DataTable)
        cursor = sug.cursor_row
        sug.clear()
        for s in data.suggestions:
            sug.add_row(s.name, s.kind, Text(fmt.tokens(s.tokens), justify="right"),
                        Text(str(s.sessions), justify="right"), Text(f"{s.days:g}", justify="right"),
                        Text("0", justify="right"),
                        Text(f"{fmt.tokens(s.projected_tokens_per_session)} tok "
                             f"≈ {fmt.usd(s.projected_usd_per_session)}", justify="right"),
                        Text("built-in: f" if s.needs_force else "", style="yellow"), key=s.name)
        size_columns(sug)
        if data.suggestions:
            sug.move_cursor(row=min(cursor, len(data.suggestions) - 1))
        self._sync_switch()
        self._describe()

    def show_proxy(self, state: ProxyState) -> None:
        self.proxy = state
        self._sync_switch()

    def _sync_switch(self) -> None:
        switch = self.query_one("#tool-filter-switch", Switch)
        state = self.proxy
        reason = self.query_one("#tools-reason", Static)
        on = bool(state.settings.get("tool_filter")) if state else bool(self.data and self.data.tool_filter)
        with switch.prevent(Switch.Changed):
            switch.value = on
        switch.disabled = not (state and state.running)
        if state and state.running:
            reason.update(Text("space: remove/restore the highlighted name · f: force (built-ins)", style="dim"))
            switch.tooltip = None
        else:
            reason.update(Text(f"toggles disabled: {state.reason if state else 'looking for a proxy…'}",
                               style="yellow"))
            switch.tooltip = state.detail if state else None

    # -- toggles out -----------------------------------------------------------------
    def on_switch_changed(self, event: Switch.Changed) -> None:
        if event.switch.id == "tool-filter-switch":
            event.stop()
            op = "on" if event.value else "off"
            self.post_message(ControlRequested(f"tool filter {op}", "tools", {"op": op, "source": "dashboard"}))

    def _highlighted(self) -> str | None:
        focused = self.app.focused
        table = focused if isinstance(focused, DataTable) and focused.id in ("tools-table", "suggest-table") \
            else self.query_one("#tools-table", DataTable)
        if table.row_count == 0:
            return None
        key, _ = table.coordinate_to_cell_key(table.cursor_coordinate)
        return key.value

    def _toggle(self, force: bool) -> None:
        name = self._highlighted()
        if name is None or self.data is None:
            return
        if not (self.proxy and self.proxy.running):
            self.app.notify(f"Cannot change {name}: {self.proxy.reason if self.proxy else 'no proxy'}",
                            severity="warning")
            return
        removals = set(self.data.removals)
        cover = next((t.removal for t in self.data.tools if t.name == name), None)
        if name in removals and not force:
            self.post_message(ControlRequested(f"restore {name}", "tools",
                                               {"op": "restore", "name": name, "source": "dashboard"}))
        elif cover and cover != name:
            self.app.notify(f"{name} is removed with {cover}: restore {cover} instead", severity="warning")
        else:
            self.post_message(ControlRequested(f"remove {name}", "tools",
                                               {"op": "remove", "name": name, "force": force, "source": "dashboard"}))

    def action_toggle_name(self) -> None:
        self._toggle(force=False)

    def action_force_remove(self) -> None:
        self._toggle(force=True)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._describe()

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        self._describe()  # tab to the other table: the detail follows its highlighted row

    def _describe(self) -> None:
        detail = self.query_one("#tools-detail", Static)
        name = self._highlighted()
        if self.data is None or name is None:
            detail.update("")
            return
        s = next((x for x in self.data.suggestions if x.name == name), None)
        if s is not None:
            detail.update(Text.assemble((s.name, "bold"), f" ({s.kind}) ", (s.summary, "italic"), "\n",
                                        ("Evidence: ", "dim"), s.basis, "\n",
                                        ("Projected ", "dim"), f"{fmt.tokens(s.projected_tokens_per_session)} tokens "
                                        f"per session ≈ {fmt.usd(s.projected_usd_per_session)} ({s.priced_as})"
                                        + (" · a built-in: needs f (force)" if s.needs_force else "")))
            return
        t = next((x for x in self.data.tools if x.name == name), None)
        if t is not None:
            detail.update(Text.assemble((t.name, "bold"), f" ({t.kind}): {fmt.tokens(t.tokens)} tokens per request, "
                                        f"declared in {t.sessions} session(s), called {t.calls} time(s)",
                                        (f" · {t.status}" if t.status else "", "red")))
