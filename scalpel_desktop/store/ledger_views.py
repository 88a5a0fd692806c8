"""The ledger reader's everyday views: usage rows, projects, the context breakdown.

Part of the ledger reader (``store/ledger_queries.py``, whose helpers it uses): the
queries behind the dashboard's Usage tab (daily, monthly, 5-hour blocks, cost
per session), the project a session is named by, and the latest request's
context figures for the ``/context``-like breakdown. Read-only, no content.
"""

from __future__ import annotations

import sqlite3

from scalpel_desktop.store.ledger_queries import _CONVERSATION, _MAIN, _REQUEST, _columns, tables


USAGE_COLUMNS = ("ts", "session", "model", "input_tokens", "cache_write_5m", "cache_write_1h", "cache_read",
                 "output_tokens", "realized_tokens", "realized_usd")


def usage_rows(conn: sqlite3.Connection, since: float | None, until: float,
               sessions: list[str] | None = None) -> list[tuple]:
    """``USAGE_COLUMNS`` of every request with usage counts and ``since <= ts <= until`` (and in
    ``sessions`` when given), oldest first: what ``accounting/usage_views.py`` turns into daily,
    monthly, 5-hour block and session costs. Requests only: a side call (``count_tokens``) is
    neither a request nor a cost, whatever its row holds."""
    where = ["ts <= ?", _REQUEST,
             "(input_tokens IS NOT NULL OR cache_read IS NOT NULL OR output_tokens IS NOT NULL)"]
    args: list = [until]
    if since is not None:
        where.append("ts >= ?")
        args.append(since)
    if sessions is not None:
        if not sessions:
            return []
        where.append(f"session IN ({','.join('?' * len(sessions))})")
        args += sessions
    return conn.execute(f"SELECT {', '.join(USAGE_COLUMNS)} FROM requests WHERE {' AND '.join(where)} "
                        "ORDER BY ts, id", args).fetchall()


def session_projects(conn: sqlite3.Connection, sessions: list[str]) -> dict[str, str]:
    """Session -> the working directory its latest request stated (sessions without one are left out)."""
    if not sessions or "project" not in _columns(conn, "requests"):
        return {}
    out: dict[str, str] = {}
    for start in range(0, len(sessions), 500):
        chunk = sessions[start:start + 500]
        for s, p in conn.execute(
                f"""SELECT session, project FROM requests r
                    WHERE session IN ({','.join('?' * len(chunk))}) AND project IS NOT NULL AND project != ''
                      AND id = (SELECT MAX(id) FROM requests WHERE session = r.session AND project IS NOT NULL
                                AND project != '')""", chunk):
            out[s] = p
    return out


class ContextFigures:
    """The latest main-agent request of one session, for the ``/context``-like breakdown.

    ``prompt`` is exact (input + cache writes + cache reads of its usage, None
    without usage); ``regions`` the estimated tokens per region of the body
    received (JSON from the identify stage; None before migration m005);
    ``removed`` the estimated tokens scalpel's stubs took out of that request;
    ``dead_left`` the dead tool output the surgery found but did not cut, from
    the latest request it was measured on (``dead_ts``), None when never measured.
    """

    __slots__ = ("session", "ts", "model", "prompt", "estimate", "regions", "removed", "dead_left", "dead_ts",
                 "cut_tokens", "cuts")

    def __init__(self, session: str):
        self.session = session
        self.ts = 0.0
        self.model = ""
        self.prompt: int | None = None
        self.estimate: int | None = None
        self.regions: dict[str, int] | None = None
        self.removed = 0
        self.dead_left: int | None = None
        self.dead_ts: float | None = None
        self.cut_tokens = 0  # every cut of the session, from the surgery log
        self.cuts = 0


def session_context(conn: sqlite3.Connection, session: str, until: float | None = None) -> ContextFigures | None:
    import json

    cols = _columns(conn, "requests")
    where = f"session = ? AND {_CONVERSATION} AND {_MAIN}"
    args: list = [session]
    if until is not None:
        where += " AND ts <= ?"
        args.append(until)
    regions = "regions" if "regions" in cols else "NULL"
    row = conn.execute(
        f"""SELECT ts, model, input_tokens, cache_write_5m, cache_write_1h, cache_read, est_tokens_after,
                   tokens_removed, {regions}
            FROM requests WHERE {where} ORDER BY ts DESC, id DESC LIMIT 1""", args).fetchone()
    if row is None:
        return None
    out = ContextFigures(session)
    ts, out.model, i, w5, w1, cr, est, removed, reg = row
    out.ts, out.model, out.removed, out.estimate = float(ts), out.model or "", int(removed or 0), est
    if any(v is not None for v in (i, w5, w1, cr)):
        out.prompt = (i or 0) + (w5 or 0) + (w1 or 0) + (cr or 0)
    try:
        parsed = json.loads(reg) if reg else None
        out.regions = {str(k): int(v) for k, v in parsed.items() if isinstance(v, (int, float))} \
            if isinstance(parsed, dict) else None
    except ValueError:
        out.regions = None
    for fig, fts in conn.execute(
            f"""SELECT figures, ts FROM requests WHERE {where} AND figures LIKE '%"dead_left"%'
                ORDER BY ts DESC, id DESC LIMIT 1""", args):
        try:
            out.dead_left, out.dead_ts = int(json.loads(fig)["dead_left"]), float(fts)
        except (ValueError, KeyError, TypeError):
            pass
    if "cuts" in tables(conn):
        n, tok = conn.execute("SELECT COUNT(*), COALESCE(SUM(tokens), 0) FROM cuts WHERE session = ?"
                              + (" AND created_at <= ?" if until is not None else ""),
                              [session] + ([until] if until is not None else [])).fetchone()
        out.cuts, out.cut_tokens = int(n), int(tok)
    return out
