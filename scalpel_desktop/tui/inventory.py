"""The Tools tab's data: the inventory and the removal suggestions, as plain dataclasses.

No SQL here: ``tools/listing.py`` and ``tools/suggest.py`` own those queries;
this runs them over the dashboard's read-only connection (only their read
paths are used) and keeps what the screen shows.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from typing import Any

from scalpel_desktop.store.ledger_queries import tables

@dataclass(frozen=True)
class ToolRow:
    name: str
    kind: str
    tokens: int
    sessions: int
    calls: int
    removal: str | None  # the removal-list entry covering this name (itself, or mcp__<server>)
    status: str
    realized_tokens: int
    realized_usd: float | None


@dataclass(frozen=True)
class Suggestion:
    name: str
    kind: str
    tokens: int
    sessions: int
    days: float
    projected_tokens_per_session: int
    projected_usd_per_session: float | None
    priced_as: str
    basis: str
    needs_force: bool
    summary: str


@dataclass(frozen=True)
class ToolsData:
    now: float
    tool_filter: bool
    tools: list[ToolRow] = field(default_factory=list)
    removals: tuple[str, ...] = ()
    suggestions: list[Suggestion] = field(default_factory=list)
    withheld: int = 0
    coverage_sessions: int = 0
    coverage_days: float = 0.0
    thresholds: dict[str, Any] = field(default_factory=dict)
    realized_tokens: int = 0
    realized_usd: float | None = None
    missing: str = ""


def load_tools(conn: sqlite3.Connection, now: float, *, tool_filter: bool, prices: Any = None) -> ToolsData:
    """The inventory and suggestions, through the tools package's own readers (read-only)."""
    if "tool_declarations" not in tables(conn):
        return ToolsData(now, tool_filter, missing="no tool inventory yet (the ledger has no tools tables)")
    from scalpel_desktop.tools.listing import inventory_listing
    from scalpel_desktop.tools.store import ToolStore
    from scalpel_desktop.tools.suggest import build_report

    store = ToolStore(conn)  # only its read paths are used: the connection is read-only
    listing = inventory_listing(store, {"tool_filter": tool_filter})
    report = build_report(store, prices=prices)
    tools = [ToolRow(t["name"], t["kind"], int(t["tokens"]), int(t["sessions"]), int(t["calls"]), t["removal"],
                     t["status"], int(t["realized"]["tokens"] or 0), t["realized"]["usd"]) for t in listing["tools"]]
    suggestions = [Suggestion(s["name"], s["kind"], int(s["tokens"]), int(s["sessions"]), float(s["days"]),
                              int(s["projected"]["tokens_per_session"]), s["projected"]["usd_per_session"],
                              s["projected"]["priced_as"], s["basis"], bool(s["needs_force"]), s["summary"])
                   for s in report["suggestions"]]
    return ToolsData(now, tool_filter, tools, tuple(r["name"] for r in listing["removals"]), suggestions,
                     int(report["withheld"]["count"]), int(report["coverage"]["sessions"]),
                     float(report["coverage"]["days"]), dict(report["thresholds"]),
                     int(listing["realized"]["tokens"] or 0), listing["realized"]["usd"])
