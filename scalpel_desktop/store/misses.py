"""The ledger's cache misses (migration m008): the named queries every frontend reads them through.

Why here: ledger SQL lives in ``store/`` only (llm's habit: one module owns
reading its tables; the CLI, the report, the dashboard and the tray call
named queries). A miss is a ``requests`` row whose ``miss_cause`` is set
(``pipeline/miss_watch.py`` finds it); a ledger from before m008 has no such
column and no misses: every query then answers empty, never an error. The
provider's own reason (m010, ``provider_miss_reason``) rides along when the
ledger has it.

``by_cause`` and ``by_session`` group rows already read (the dashboard's
misses tab); ``today_misses_or_unknown`` opens its own short-lived connection
for the tray, which must never wait long on a busy ledger.
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
    provider_reason: str = ""  # the provider's cache_miss_reason.type (m010); "" when not asked

    def as_dict(self) -> dict[str, Any]:
        return {"session": self.session, "ts": self.ts, "model": self.model, "cause": self.cause,
                "tokens_rewritten": self.tokens_rewritten, "cost_usd": round(self.cost_usd, 6),
                "read_stopped_at": self.read_stopped_at, "detail": self.detail,
                "provider_reason": self.provider_reason or None}


def _columns(conn: sqlite3.Connection) -> set[str]:
    return {r[1] for r in conn.execute("PRAGMA table_info(requests)")}


def _has_misses(conn: sqlite3.Connection) -> bool:
    return "miss_cause" in _columns(conn)


def misses_since(conn: sqlite3.Connection, since: float = 0.0, session: str | None = None,
                 limit: int = 10_000) -> list[MissRow]:
    """The misses from ``since`` on (of one ``session`` when given), oldest first."""
    have = _columns(conn)
    if "miss_cause" not in have:
        return []
    where, args = "miss_cause IS NOT NULL AND ts >= ?", [since]
    if session is not None:
        where += " AND session = ?"
        args.append(session)
    provider = "provider_miss_reason" if "provider_miss_reason" in have else "NULL"
    rows = conn.execute(f"SELECT session, ts, model, miss_cause, miss_tokens, miss_usd, cache_read, miss_detail, "
                        f"{provider} FROM requests WHERE {where} ORDER BY ts LIMIT ?", [*args, limit]).fetchall()
    return [MissRow(s or "", float(ts or 0), m or "", c, int(t or 0), float(u or 0), r, _detail(d), p or "")
            for s, ts, m, c, t, u, r, d, p in rows]


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


def miss_cost_by_session(conn: sqlite3.Connection, since: float = 0.0, sessions: list[str] | None = None,
                         until: float | None = None) -> dict[str, tuple[int, float]]:
    """session -> (misses, their cost $) from ``since`` on (to ``until``; of ``sessions`` when given):
    the dashboard's sessions table."""
    if not _has_misses(conn) or sessions == []:
        return {}
    where, args = "miss_cause IS NOT NULL AND ts >= ?", [since]
    if until is not None:
        where += " AND ts <= ?"
        args.append(until)
    if sessions is not None:
        where += f" AND session IN ({','.join('?' * len(sessions))})"
        args.extend(sessions)
    return {s: (int(n), float(u or 0)) for s, n, u in conn.execute(
        f"SELECT session, COUNT(*), SUM(miss_usd) FROM requests WHERE {where} GROUP BY session", args)}


def misses_between(conn: sqlite3.Connection, since: float, until: float) -> tuple[int, float]:
    """(misses, their cost $) with ``since <= ts <= until``; (0, 0.0) on a ledger from before m008."""
    if not _has_misses(conn):
        return 0, 0.0
    n, usd = conn.execute("SELECT COUNT(*), COALESCE(SUM(miss_usd), 0) FROM requests "
                          "WHERE miss_cause IS NOT NULL AND ts >= ? AND ts <= ?", (since, until)).fetchone()
    return int(n), float(usd)


def today_misses_or_unknown(db=None, now: float | None = None, timeout: float | None = None
                            ) -> tuple[tuple[int, float] | None, str]:
    """``((misses, cost $) since local midnight, "")`` on a connection of its own; zeros without a
    ledger yet, ``(None, why)`` when a ledger is there and cannot be read (like ``today_savings_or_unknown``:
    unknown is not 0). ``timeout`` defaults to the hooks' short one: the tray's refresher never waits long."""
    from scalpel_desktop import clock
    from scalpel_desktop.store.ledger_queries import HOOK_TIMEOUT_S, has_requests, open_readonly

    now = clock.now() if now is None else now
    try:
        conn = open_readonly(db, timeout=HOOK_TIMEOUT_S if timeout is None else timeout)
    except sqlite3.Error as e:
        return None, f"{type(e).__name__}: {e}"
    if conn is None:
        return (0, 0.0), ""
    try:
        if not has_requests(conn):
            return (0, 0.0), ""
        return misses_between(conn, clock.start_of_today(now), now), ""
    except sqlite3.Error as e:
        return None, f"{type(e).__name__}: {e}"
    finally:
        conn.close()


@dataclass(frozen=True)
class CauseFigures:
    """The misses of one cause: how many, the tokens they re-wrote, what that cost."""

    cause: str
    count: int
    tokens_rewritten: int
    cost_usd: float


@dataclass(frozen=True)
class SessionMisses:
    """One session's misses: totals, by cause (``CAUSES`` order) and the provider's reasons (most first)."""

    session: str
    count: int
    tokens_rewritten: int
    cost_usd: float
    causes: tuple[CauseFigures, ...] = ()
    provider: tuple[tuple[str, int], ...] = ()

    @property
    def main_cause(self) -> str:
        """The cause that cost the session most (then the most frequent, then the first in ``CAUSES``)."""
        if not self.causes:
            return ""
        return max(self.causes, key=lambda c: (c.cost_usd, c.count, -_order(c.cause))).cause


def _order(cause: str) -> int:
    return CAUSES.index(cause) if cause in CAUSES else len(CAUSES)


def by_cause(misses: list[MissRow]) -> list[CauseFigures]:
    """One line per cause seen, in ``CAUSES`` order (a cause a newer proxy wrote, after them: never lost)."""
    out = []
    for cause in sorted({x.cause for x in misses}, key=lambda c: (_order(c), c)):
        these = [x for x in misses if x.cause == cause]
        if these:
            out.append(CauseFigures(cause, len(these), sum(x.tokens_rewritten for x in these),
                                    sum(x.cost_usd for x in these)))
    return out


def by_session(misses: list[MissRow]) -> list[SessionMisses]:
    """One line per session with misses, the costliest first (then the one with more misses, then by id)."""
    groups: dict[str, list[MissRow]] = {}
    for x in misses:
        groups.setdefault(x.session, []).append(x)
    out = []
    for session, these in groups.items():
        provider: dict[str, int] = {}
        for x in these:
            if x.provider_reason:
                provider[x.provider_reason] = provider.get(x.provider_reason, 0) + 1
        out.append(SessionMisses(session, len(these), sum(x.tokens_rewritten for x in these),
                                 sum(x.cost_usd for x in these), tuple(by_cause(these)),
                                 tuple(sorted(provider.items(), key=lambda kv: (-kv[1], kv[0])))))
    return sorted(out, key=lambda m: (-m.cost_usd, -m.count, m.session))


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
