"""The tray menu as a model: what it shows comes from a ``TrayState``, what it
does is a command *name* handed to ``emit`` (the dispatcher maps names to
actions). Building a pystray menu from the model is the only pystray code here.

Commands::

    toggle_pause        Pause / Resume (the default click action)
    toggle_autopilot    On (checkbox: autopilot at login)
    tier:1  tier:2      radio
    policy:cold  policy:death  policy:payback  policy:off   radio
    toggle_tool_filter  checkbox
    open_dashboard  open_data_folder  quit
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

COMMANDS = (
    "toggle_pause", "toggle_autopilot", "tier:1", "tier:2", "policy:cold", "policy:death", "policy:payback",
    "policy:off",
    "toggle_tool_filter", "open_dashboard", "open_data_folder", "quit",
)


@dataclass
class TrayState:
    """What the menu and icon show; refreshed from the proxy's status."""

    icon: str = "off"  # active | paused | off | error
    running: bool = False
    paused: bool = False
    autopilot: bool = False
    tier: int = 2
    policy: str = "cold"
    tool_filter: bool = False
    port: int | None = None
    saved_tokens_today: int | None = 0  # these three: None when the proxy could not read the ledger
    saved_usd_today: float | None = 0.0
    requests_today: int | None = 0
    misses_today: int | None = 0  # today's cache misses and their cost; None: unknown (ledger unreadable)
    miss_usd_today: float | None = 0.0
    message: str = ""  # last error from the dispatcher, shown in the status line
    #: The proxy's own degraded states that need a look (status ``degraded``, fail and warn only:
    #: a pause or ``policy off`` is the user's choice and shows as such), as (label, reason).
    problems: list[tuple[str, str]] = field(default_factory=list)

    def status_line(self) -> str:
        if self.message:
            return self.message[:90]
        if not self.running:
            return "scalpel: proxy off" if self.icon != "error" else "scalpel: proxy not answering"
        what = "paused (pass-through)" if self.paused else "active"
        return f"scalpel {what} on :{self.port} - saved {self.saved_today()} today"

    def saved_today(self) -> str:
        """Today's realized saving, e.g. ``12,345 tokens ($0.05)``; "unknown" when the ledger cannot be read."""
        if self.saved_tokens_today is None or self.saved_usd_today is None:
            return "unknown"
        return f"{self.saved_tokens_today:,} tokens (${self.saved_usd_today:,.2f})"

    def problems_line(self) -> str:
        """The menu's warning line, e.g. ``Degraded: recording off, surgery off (scalpel doctor)``; "" when none."""
        if not self.running or not self.problems:
            return ""
        return f"Degraded: {', '.join(label for label, _ in self.problems)} (scalpel doctor)"

    def tooltip(self) -> str:
        if not self.running:
            return "scalpel-desktop: proxy off"
        what = "paused" if self.paused else "active"
        requests = "unknown" if self.requests_today is None else f"{self.requests_today:,}"
        tip = f"scalpel-desktop ({what}): saved {self.saved_today()} today, {requests} requests"
        if self.misses_today and self.miss_usd_today is not None:  # only when there were misses
            tip += f"; misses today {_usd(self.miss_usd_today)}"
        if self.problems:
            tip += f"; DEGRADED: {', '.join(label for label, _ in self.problems)}"
        return tip


def _usd(x: float) -> str:
    """$0.42; below half a cent four decimals ($0.0031), so a miss never reads as $0.00."""
    return f"${x:.4f}" if 0 < abs(x) < 0.005 else f"${x:,.2f}"


@dataclass(frozen=True)
class Entry:
    """One menu line: text, command, and how it shows its state."""

    text: Callable[[TrayState], str] | str
    command: str | None = None  # None: a disabled line
    checked: Callable[[TrayState], bool] | None = None
    radio: bool = False
    default: bool = False
    enabled: Callable[[TrayState], bool] | None = None
    separator: bool = False
    visible: Callable[[TrayState], bool] | None = None


def entries() -> list[Entry]:
    running = lambda s: s.running  # noqa: E731
    return [
        Entry(lambda s: s.status_line()),
        Entry(lambda s: s.problems_line(), visible=lambda s: bool(s.problems_line())),
        Entry("", separator=True),
        Entry(lambda s: "Resume" if s.paused else "Pause", "toggle_pause", default=True, enabled=running),
        Entry("On (autopilot at login)", "toggle_autopilot", checked=lambda s: s.autopilot),
        Entry("", separator=True),
        Entry("Tier 1 (safe cuts)", "tier:1", checked=lambda s: s.tier == 1, radio=True),
        Entry("Tier 2 (also stale output)", "tier:2", checked=lambda s: s.tier == 2, radio=True),
        Entry("", separator=True),
        Entry("Policy: cold cache only", "policy:cold", checked=lambda s: s.policy == "cold", radio=True),
        Entry("Policy: cut at death (default)", "policy:death", checked=lambda s: s.policy == "death", radio=True),
        Entry("Policy: payback", "policy:payback", checked=lambda s: s.policy == "payback", radio=True),
        Entry("Policy: off", "policy:off", checked=lambda s: s.policy == "off", radio=True),
        Entry("", separator=True),
        Entry("Tool filter", "toggle_tool_filter", checked=lambda s: s.tool_filter),
        Entry("", separator=True),
        Entry("Open dashboard", "open_dashboard"),
        Entry("Open data folder", "open_data_folder"),
        Entry("Quit", "quit"),
    ]


def build_pystray_menu(pystray: Any, state: Callable[[], TrayState], emit: Callable[[str], None]):
    """A pystray Menu whose items read ``state()`` and call ``emit(command)``."""
    items = []
    for e in entries():
        if e.separator:
            items.append(pystray.Menu.SEPARATOR)
            continue
        text = e.text if isinstance(e.text, str) else (lambda item, f=e.text: f(state()))
        if e.command is None:
            shown = True if e.visible is None else (lambda item, f=e.visible: bool(f(state())))
            items.append(pystray.MenuItem(text, None, enabled=False, visible=shown))
            continue
        kwargs: dict[str, Any] = {"default": e.default, "radio": e.radio}
        if e.checked is not None:
            kwargs["checked"] = lambda item, f=e.checked: bool(f(state()))
        if e.enabled is not None:
            kwargs["enabled"] = lambda item, f=e.enabled: bool(f(state()))
        items.append(pystray.MenuItem(text, _action(emit, e.command), **kwargs))
    return pystray.Menu(*items)


def _action(emit: Callable[[str], None], command: str):
    """pystray counts an action's parameters, so no default-argument lambdas here."""

    def action(icon, item):
        emit(command)

    return action
