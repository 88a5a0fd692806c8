"""Every message the dashboard passes around, each a small dataclass (toolong's style).

Workers (threads) post the ``*Loaded`` / ``ProxyPolled`` / ``ActionDone`` messages
to the app; screens post ``ControlRequested`` when the user flips a toggle, and
the app runs it through the proxy's control API in a worker. High-rate updates
replace a pending one of the same kind (``can_replace``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from textual.message import Message

from scalpel_desktop.tui.data import DecisionsData, SavingsData, SessionsData
from scalpel_desktop.tui.inventory import ToolsData
from scalpel_desktop.tui.proxy import ActionResult, ProxyState
from scalpel_desktop.tui.views_data import MissesData, UsageData


@dataclass
class ProxyPolled(Message):
    """The proxy's state after a status poll (running or not, settings, why toggles are off)."""

    state: ProxyState

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, ProxyPolled)


@dataclass
class SessionsLoaded(Message):
    data: SessionsData

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, SessionsLoaded)


@dataclass
class SavingsLoaded(Message):
    data: SavingsData

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, SavingsLoaded)


@dataclass
class DecisionsLoaded(Message):
    data: DecisionsData

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, DecisionsLoaded)


@dataclass
class ToolsLoaded(Message):
    data: ToolsData

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, ToolsLoaded)


@dataclass
class UsageLoaded(Message):
    data: UsageData

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, UsageLoaded)


@dataclass
class MissesLoaded(Message):
    data: MissesData

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, MissesLoaded)


@dataclass
class LoadFailed(Message):
    """Reading the ledger failed (locked past the timeout, corrupt, ...)."""

    pane: str
    error: str


@dataclass
class LedgerReadable(Message):
    """A pane's read of the ledger succeeded: a notice about an unreadable ledger can go."""

    pane: str


@dataclass
class ControlRequested(Message):
    """A screen asks for a control action: ``what`` is the words shown to the user."""

    what: str
    action: str
    payload: dict[str, Any] = field(default_factory=dict)


@dataclass
class ActionDone(Message):
    result: ActionResult


@dataclass
class ReloadRequested(Message):
    """A screen wants its data read again now (a filter changed)."""

    pane: str
