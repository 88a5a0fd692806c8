"""The ledger's cache misses (migration m008): the named queries every frontend reads them through.

Why here: ledger SQL lives in ``store/`` only (llm's habit: one module owns
reading its tables; the CLI, the report, the dashboard and the tray call
named queries). A miss is a ``requests`` row whose ``miss_cause`` is set
(``pipeline/miss_watch.py`` finds it); a ledger from before m008 has no such
column and no misses: every query then answers empty, never an error.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from typing import Any

from scalpel_desktop.accounting.misses import CAUSES


@dataclass(frozen=True)
class MissRow:
    session: str
    ts: float
    model: str
    cause: str
    tokens_rewritten: int
    cost_usd: float
    read_stopped_at: int | None
    detail: dict = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"session": self.session, "ts": self.ts, "model": self.model, "cause": self.cause,
                "tokens_rewritten": self.tokens_rewritten, "cost_usd": round(self.cost_usd, 6),
                "read_stopped_at": self.read_stopped_at, "detail": self.detail}


def _has_misses(conn: sqlite3.Connection) -> bool:
    return any(r[1] == "miss_cause" for r in conn.execute("PRAGMA table_info(requests)"))


def misses_since(conn: sqlite3.Connection, since: float = 0.0, session: str | None = None,
                 limit: int = 10_000) -> list[MissRow]:
    """The misses from ``since`` on (of one ``session`` when given), oldest first."""
    if not _has_misses(conn):
        return []
    where, args = "miss_cause IS NOT NULL AND ts >= ?", [since]
    if session is not None:
        where += " AND session = ?"
        args.append(session)
    rows = conn.execute(f"SELECT session, ts, model, miss_cause, miss_tokens, miss_usd, cache_read, miss_detail "
                        f"FROM requests WHERE {where} ORDER BY ts LIMIT ?", [*args, limit]).fetchall()
    return [MissRow(s or "", float(ts or 0), m or "", c, int(t or 0), float(u or 0), r, _detail(d))
            for s, ts, m, c, t, u, r, d in rows]


def miss_totals(misses: list[MissRow]) -> dict[str, Any]:
    """``{"count", "cost_usd", "tokens_rewritten", "by_cause": {CAUSE: {"count", "cost_usd"}}}`` (causes
    in ``CAUSES`` order, only those seen)."""
    by: dict[str, dict[str, Any]] = {}
    for cause in CAUSES:
        these = [x for x in misses if x.cause == cause]
        if these:
            by[cause] = {"count": len(these), "cost_usd": round(sum(x.cost_usd for x in these), 6)}
    return {"count": len(misses), "cost_usd": round(sum(x.cost_usd for x in misses), 6),
            "tokens_rewritten": sum(x.tokens_rewritten for x in misses), "by_cause": by}


def miss_cost_by_session(conn: sqlite3.Connection, since: float = 0.0) -> dict[str, tuple[int, float]]:
    """session -> (misses, their cost $) from ``since`` on: the dashboard's sessions table."""
    if not _has_misses(conn):
        return {}
    return {s: (int(n), float(u or 0)) for s, n, u in conn.execute(
        "SELECT session, COUNT(*), SUM(miss_usd) FROM requests WHERE miss_cause IS NOT NULL AND ts >= ? "
        "GROUP BY session", (since,))}


def repeated_causes(conn: sqlite3.Connection, since: float, causes: tuple[str, ...], at_least: int = 3
                    ) -> list[tuple[str, str, int]]:
    """(session, cause, count) where one of ``causes`` happened ``at_least`` times in one session since
    ``since``: a pattern that repeats (``scalpel doctor``), most frequent first."""
    if not _has_misses(conn) or not causes:
        return []
    marks = ",".join("?" * len(causes))
    return [(s or "", c, int(n)) for s, c, n in conn.execute(
        f"SELECT session, miss_cause, COUNT(*) AS n FROM requests WHERE ts >= ? AND miss_cause IN ({marks}) "
        "GROUP BY session, miss_cause HAVING n >= ? ORDER BY n DESC", (since, *causes, at_least))]


def _detail(text: Any) -> dict:
    try:
        got = json.loads(text) if text else {}
    except ValueError:
        return {}
    return got if isinstance(got, dict) else {}
