"""The dashboard app: tabs, a refresh timer, thread workers, and the proxy link.

Blocking work (SQLite reads, control-API calls) runs in ``@work(thread=True)``
workers, which post their results back as messages (``tui/messages.py``); no
widget runs SQL (``tui/data.py`` has all of it). While a proxy runs, the
active tab is re-read every ``refresh_s`` seconds, but only when the ledger
changed since the last read. With no proxy, the figures are the ledger file's
and every toggle is disabled, with the reason on screen.

``make_app`` is the one factory: ``scalpel tui`` and the tests both use it.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any, Callable

from rich.text import Text
from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widgets import Footer, Header, Static, TabbedContent, TabPane, Tabs

from scalpel_desktop.tui import data, inventory
from scalpel_desktop.tui.messages import (
    ActionDone, ControlRequested, DecisionsLoaded, LedgerReadable, LoadFailed, MissesLoaded, ProxyPolled,
    ReloadRequested, SavingsLoaded, SessionsLoaded, ToolsLoaded, UsageLoaded,
)
from scalpel_desktop.tui.notice import notice
from scalpel_desktop.tui.proxy import ProxyLink, ProxyState, saved_settings
from scalpel_desktop.tui.screens.decisions import DecisionsView
from scalpel_desktop.tui.screens.misses import MissesView
from scalpel_desktop.tui.screens.savings import SavingsView
from scalpel_desktop.tui.screens.sessions import SessionsView
from scalpel_desktop.tui.screens.settings import SettingsView
from scalpel_desktop.tui.screens.tools import ToolsView
from scalpel_desktop.tui.screens.usage import UsageView
from scalpel_desktop.tui.views_data import MissesData, UsageData

PANES = (
    ("sessions", "Sessions", SessionsView),
    ("savings", "Savings", SavingsView),
    ("decisions", "Decisions", DecisionsView),
    ("tools", "Tools", ToolsView),
    ("settings", "Settings", SettingsView),
    ("usage", "Usage", UsageView),
    ("misses", "Misses", MissesView),
)
LEDGER_PANES = ("sessions", "savings", "decisions", "tools", "usage", "misses")


class Dashboard(App):
    CSS_PATH = "app.tcss"
    TITLE = "scalpel"
    SUB_TITLE = "dashboard"
    BINDINGS = [
        *(Binding(str(i), f"show_tab('{pane}')", label, show=True) for i, (pane, label, _) in enumerate(PANES, 1)),
        Binding("r", "reload", "Refresh", show=True),
        Binding("q", "quit", "Quit", show=True),
    ]

    def __init__(self, db_path: Path | str | None = None, control: Any = None,
                 clock: Callable[[], float] | None = None, refresh_s: float = 2.0):
        super().__init__()
        if db_path is None:
            from scalpel_desktop.paths import dirs

            db_path = dirs().database
        if clock is None:
            from scalpel_desktop import clock as _clock

            clock = _clock.now
        self.db_path = Path(db_path)
        self.clock = clock
        self.refresh_s = refresh_s
        self.link = ProxyLink(control)
        self.proxy_state: ProxyState | None = None
        self._versions: dict[str, data.LedgerVersion] = {}
        self._prices: Any = None
        self.ledger_error = ""  # why the dashboard's last ledger read failed ("" when it did not)

    # -- layout --------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield Header(show_clock=False)
        yield Static("Checking for a running proxy…", id="proxy-bar")
        yield Static("", id="notice")  # what is off or failing (tui/notice.py); hidden when nothing is
        with TabbedContent(initial="sessions", id="tabs"):
            for i, (pane, label, view) in enumerate(PANES, 1):
                with TabPane(f"{i} {label}", id=pane):
                    yield view(id=f"{pane}-view")
        yield Footer()

    def on_mount(self) -> None:
        self.set_interval(self.refresh_s, self.tick, name="refresh")
        self.poll_proxy()
        self.load_pane(self.active_pane, force=True)

    @property
    def active_pane(self) -> str:
        return self.query_one("#tabs", TabbedContent).active or "sessions"

    def view(self, pane: str) -> Any:
        return self.query_one(f"#{pane}-view")

    # -- keys ----------------------------------------------------------------------
    def action_show_tab(self, pane: str) -> None:
        self.query_one("#tabs", TabbedContent).active = pane

    def action_reload(self) -> None:
        self.poll_proxy()
        self.load_pane(self.active_pane, force=True)

    @on(TabbedContent.TabActivated)
    def _tab_activated(self, event: TabbedContent.TabActivated) -> None:
        pane = event.pane.id or ""
        # Focus the tab's first table or control, so its keys (space, f, a) work right away; else
        # the tab strip (focus left in a hidden tab would make TabbedContent switch back to it).
        first = next(iter(self.view(pane).query("DataTable, Switch:enabled")), None) if pane else None
        if pane == "usage":  # a scrolling page: focus it at its top, not a table half-way down
            first = self.view(pane)
        (first or event.tabbed_content.query_one(Tabs)).focus()
        if pane in LEDGER_PANES:
            self.load_pane(pane, force=False)

    # -- the timer -------------------------------------------------------------------
    def tick(self) -> None:
        self.poll_proxy()
        if self.proxy_state is not None and self.proxy_state.running:
            self.load_pane(self.active_pane, force=False)

    # -- workers (threads) -----------------------------------------------------------
    @work(thread=True, exclusive=True, group="proxy", exit_on_error=False)
    def poll_proxy(self) -> None:
        self.post_message(ProxyPolled(self.link.poll()))

    @work(thread=True, exclusive=True, group="ledger", exit_on_error=False)
    def load_pane(self, pane: str, force: bool = False) -> None:
        if pane not in LEDGER_PANES:
            return
        now = self.clock()
        try:
            conn = data.open_ledger(self.db_path)
        except sqlite3.Error as e:
            self._versions.pop(pane, None)
            self.post_message(LoadFailed(pane, f"{type(e).__name__}: {e}"))
            return
        try:
            if conn is None:
                self._versions.pop(pane, None)
                self.post_message(self._empty(pane, now))
                self.post_message(LedgerReadable(pane))
                return
            version = data.ledger_version(conn)
            if not force and self._versions.get(pane) == version:
                self.post_message(LedgerReadable(pane))
                return
            self.post_message(self._read(pane, conn, now))
            self._versions[pane] = version
            self.post_message(LedgerReadable(pane))
        except sqlite3.Error as e:
            self._versions.pop(pane, None)  # read again next time, whatever the version then
            self.post_message(LoadFailed(pane, f"{type(e).__name__}: {e}"))
        finally:
            if conn is not None:
                conn.close()

    def _read(self, pane: str, conn: sqlite3.Connection, now: float) -> Any:
        if pane == "sessions":
            return SessionsLoaded(data.load_sessions(conn, now, prices=self._price_table()))
        if pane == "usage":
            from scalpel_desktop.tui.views_data import load_usage

            return UsageLoaded(load_usage(conn, now, prices=self._price_table()))
        if pane == "misses":
            from scalpel_desktop.tui.views_data import load_misses

            return MissesLoaded(load_misses(conn, now, prices=self._price_table()))
        if pane == "savings":
            return SavingsLoaded(data.load_savings(conn, now, prices=self._price_table()))
        if pane == "decisions":
            include = bool(self.view("decisions").include_unchanged)
            from scalpel_desktop.paths import dirs

            return DecisionsLoaded(data.load_decisions(conn, now, include_unchanged=include, spill_dir=dirs().spill))
        return ToolsLoaded(inventory.load_tools(conn, now, tool_filter=self._tool_filter(), prices=self._price_table()))

    def _empty(self, pane: str, now: float, why: str = "") -> Any:
        from scalpel_desktop.paths import home_relative

        if pane not in LEDGER_PANES:
            return None
        why = why or f"no ledger at {home_relative(self.db_path)} (it appears with the proxy's first request)"
        return {"sessions": lambda: SessionsLoaded(data.SessionsData(now, missing=why)),
                "savings": lambda: SavingsLoaded(data.SavingsData(now, missing=why)),
                "decisions": lambda: DecisionsLoaded(data.DecisionsData(now, missing=why)),
                "tools": lambda: ToolsLoaded(inventory.ToolsData(now, self._tool_filter(), missing=why)),
                "usage": lambda: UsageLoaded(UsageData(now, missing=why)),
                "misses": lambda: MissesLoaded(MissesData(now, missing=why))}[pane]()

    def _tool_filter(self) -> bool:
        state = self.proxy_state
        settings = state.settings if state is not None else saved_settings()
        return bool(settings.get("tool_filter"))

    def _price_table(self) -> Any:
        if self._prices is None:
            from scalpel_desktop.accounting.prices import PriceTable

            self._prices = PriceTable.load()
        return self._prices

    @work(thread=True, group="control", exit_on_error=False)
    def run_control(self, request: ControlRequested) -> None:
        self.post_message(ActionDone(self.link.act(request.what, request.action, request.payload)))

    # -- messages from workers and screens ----------------------------------------------
    def _gone(self) -> bool:
        """A worker's message that arrives while the app shuts down finds no widgets: drop it."""
        return not self.is_running or not self.query("#proxy-bar")

    def on_proxy_polled(self, message: ProxyPolled) -> None:
        if self._gone():
            return
        before = self.proxy_state
        state = self.proxy_state = message.state
        self.query_one("#proxy-bar", Static).update(proxy_bar(state, self.refresh_s))
        self._show_notice()
        self.view("tools").show_proxy(state)
        self.view("settings").show_proxy(state, self.clock())
        if before is not None and before.running != state.running:
            self.load_pane(self.active_pane, force=True)

    def on_sessions_loaded(self, message: SessionsLoaded) -> None:
        if not self._gone():
            self.view("sessions").show(message.data)

    def on_savings_loaded(self, message: SavingsLoaded) -> None:
        if not self._gone():
            self.view("savings").show(message.data)

    def on_decisions_loaded(self, message: DecisionsLoaded) -> None:
        if not self._gone():
            self.view("decisions").show(message.data)

    def on_tools_loaded(self, message: ToolsLoaded) -> None:
        if not self._gone():
            self.view("tools").show(message.data)

    def on_usage_loaded(self, message: UsageLoaded) -> None:
        if not self._gone():
            self.view("usage").show(message.data)

    def on_misses_loaded(self, message: MissesLoaded) -> None:
        if not self._gone():
            self.view("misses").show(message.data)

    def on_load_failed(self, message: LoadFailed) -> None:
        """One notice that stays while the ledger cannot be read (not a toast per refresh); the pane
        says its figures are unknown rather than keep showing what no longer holds."""
        if self._gone():
            return
        self.ledger_error = message.error
        self._show_notice()
        why = f"the ledger cannot be read ({message.error}), so its figures (today's too) are unknown"
        failed = self._empty(message.pane, self.clock(), why=why)
        if failed is not None:
            self.post_message(failed)

    def on_ledger_readable(self, message: LedgerReadable) -> None:
        if self.ledger_error and not self._gone():
            self.ledger_error = ""
            self._show_notice()

    def _show_notice(self) -> None:
        line, details = notice(self.proxy_state, self.ledger_error)
        bar = self.query_one("#notice", Static)
        bar.update(line or "")
        bar.tooltip = details or None
        bar.display = line is not None

    def on_reload_requested(self, message: ReloadRequested) -> None:
        self.load_pane(message.pane, force=True)

    def on_control_requested(self, message: ControlRequested) -> None:
        state = self.proxy_state
        if state is None or not state.running:
            self.notify(f"Cannot {message.what}: {state.reason if state else 'no proxy found yet'}",
                        severity="warning")
            if state is not None:
                self.on_proxy_polled(ProxyPolled(state))  # put the toggles back
            return
        self.run_control(message)

    def on_action_done(self, message: ActionDone) -> None:
        r = message.result
        if r.ok:
            self.notify(f"Done: {r.what}", timeout=3)
        else:
            self.notify(f"{r.what} failed: {r.message}", severity="error", timeout=8)
        self.poll_proxy()
        self.load_pane(self.active_pane, force=True)


def proxy_bar(state: ProxyState, refresh_s: float) -> Text:
    s = state.settings
    if not state.running:
        return Text.assemble(("○ no proxy running", "bold yellow"), " — figures from the ledger file; toggles "
                             "disabled (start one with `scalpel start` or the tray)")
    paused = bool(s.get("paused"))
    st = state.status  # what acts on requests now, from the proxy itself, not what the settings ask
    if paused:
        acting = ("PAUSED (pass-through)", "bold yellow")
    else:
        acting = ("cutting", "green") if st.get("surgery_active", True) else ("surgery OFF", "bold red")
    if s.get("tool_filter") and not st.get("tool_filter_active", True) and not paused:
        tool_filter = ("OFF (asked on)", "bold red")
    else:
        tool_filter = ("on" if s.get("tool_filter") else "off", "")
    return Text.assemble(
        ("● proxy running", "bold green"), f" on 127.0.0.1:{state.port}",
        ("  ·  ", "dim"), acting,
        ("  ·  tier ", "dim"), str(s.get("tier")), ("  ·  policy ", "dim"), str(s.get("policy")),
        ("  ·  tool filter ", "dim"), tool_filter,
        ("  ·  live, every ", "dim"), (f"{refresh_s:g} s", "dim"))


def make_app(db_path: Path | str | None = None, control: Any = None, clock: Callable[[], float] | None = None,
             refresh_s: float = 2.0) -> Dashboard:
    """The dashboard. ``db_path``: the ledger (default: the user's); ``control``: how to reach the proxy
    (None: discover the running one; or a client, or a callable returning one); ``clock``: epoch seconds
    (default ``scalpel_desktop.clock.now``; tests freeze it)."""
    return Dashboard(db_path=db_path, control=control, clock=clock, refresh_s=refresh_s)
