"""The ledger reader's report and decisions-log queries: ``scalpel report`` and the Decisions tab.

Part of the ledger reader (``store/ledger_queries.py``, whose definitions it
uses), kept apart to keep that module small. Requests and side calls are told
apart here as everywhere (``ledger_queries._REQUEST``): a report row says which
side call it is, so ``accounting/report.py`` counts Claude Code's
``count_tokens`` calls apart and never as requests or in a cost; the decisions
log lists requests only, and counts the side calls apart.
"""

from __future__ import annotations

import sqlite3

from scalpel_desktop.store.ledger_queries import _REQUEST

REPORT_COLUMNS = ("ts", "model", "status", "body_bytes", "sent_bytes", "input_tokens", "cache_write_5m",
                  "cache_write_1h", "cache_read", "output_tokens", "decision", "tokens_removed", "realized_tokens",
                  "realized_usd", "error", "realized_tokens_by", "ratio_error_pct", "side_call")
REPORT_GROUPS = {"day": "ts", "session": "session", "model": "model", None: "NULL"}
# ``side_call``: None for a request, else the endpoint of the side call ("count_tokens", "other").
_SIDE_CALL = f"CASE WHEN {_REQUEST} THEN NULL ELSE endpoint END AS side_call"


def report_rows(conn: sqlite3.Connection, *, since: float | None = None, until: float | None = None,
                group: str | None = None):
    """``(group key, *REPORT_COLUMNS)`` per ledger row with ``since <= ts < until``, oldest first:
    the requests, and the side calls with their ``side_call`` set (the caller counts them apart).
    The key is the row's ts (``group="day"``), session, model, or None."""
    where, params = [], []
    if since is not None:
        where.append("ts >= ?")
        params.append(since)
    if until is not None:
        where.append("ts < ?")
        params.append(until)
    have = {r[1] for r in conn.execute("PRAGMA table_info(requests)")}  # a ledger from before m004 lacks some
    cols = ", ".join(_SIDE_CALL if c == "side_call" else c if c in have else f"NULL AS {c}"
                     for c in REPORT_COLUMNS)
    sql = f"SELECT {REPORT_GROUPS[group]}, {cols} FROM requests"
    if where:
        sql += " WHERE " + " AND ".join(where)
    return conn.execute(sql + " ORDER BY ts, id", params)


def decision_rows(conn: sqlite3.Connection, until: float, *, include_unchanged: bool = False,
                  limit: int = 200) -> list[tuple]:
    """(id, ts, session, agent, model, decision, reason, tokens_removed, realized_tokens,
    realized_usd, status) of requests (no side call), newest first; unchanged ones only when asked."""
    cond = f"ts <= ? AND {_REQUEST}" + (
        "" if include_unchanged else " AND COALESCE(decision, 'unchanged') != 'unchanged'")
    return conn.execute(
        f"""SELECT id, ts, session, agent, model, decision, reason, tokens_removed, realized_tokens,
                   realized_usd, status
            FROM requests WHERE {cond} ORDER BY ts DESC, id DESC LIMIT ?""", (until, limit)).fetchall()


def decision_counts(conn: sqlite3.Connection, until: float) -> dict[str, int]:
    """Requests per decision up to ``until`` (a missing decision counts as "unknown"); side calls
    are not requests and have no decision worth counting (``side_call_counts``)."""
    return {(d or "unknown"): int(n) for d, n in conn.execute(
        f"SELECT decision, COUNT(*) FROM requests WHERE ts <= ? AND {_REQUEST} GROUP BY decision", (until,))}


def side_call_counts(conn: sqlite3.Connection, until: float, since: float | None = None) -> dict[str, int]:
    """Side calls per endpoint (``count_tokens``, ...) with ``since <= ts <= until``: shown apart."""
    where, args = [f"NOT {_REQUEST}", "ts <= ?"], [until]
    if since is not None:
        where.append("ts >= ?")
        args.append(since)
    return {str(e): int(n) for e, n in conn.execute(
        f"SELECT endpoint, COUNT(*) FROM requests WHERE {' AND '.join(where)} GROUP BY endpoint ORDER BY endpoint",
        args)}
