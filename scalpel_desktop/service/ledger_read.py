"""Small read-only questions to the ledger (stdlib sqlite3 only; fast, never raises).

The tray's tooltip (savings today) and the statusline (this session's context,
cache share and savings) ask them. A missing ledger, table or column answers
with zeros/None: both callers must keep working before the first request.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path


def _connect(db: Path | None = None) -> sqlite3.Connection | None:
    from scalpel_desktop.paths import dirs

    path = Path(db or dirs().database)
    if not path.exists():
        return None
    try:
        return sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=0.2)
    except sqlite3.Error:
        return None


def start_of_today(now: float | None = None) -> float:
    import datetime as _dt  # not at the top: the statusline never needs it

    from scalpel_desktop import clock

    t = clock.now() if now is None else now
    d = _dt.datetime.fromtimestamp(t)
    return d.replace(hour=0, minute=0, second=0, microsecond=0).timestamp()


def savings_since(since: float, db: Path | None = None) -> tuple[int, float, int]:
    """(realized tokens, realized USD, requests) recorded since ``since``."""
    conn = _connect(db)
    if conn is None:
        return 0, 0.0, 0
    try:
        row = conn.execute(
            "SELECT COALESCE(SUM(realized_tokens),0), COALESCE(SUM(realized_usd),0), COUNT(*) FROM requests WHERE ts >= ?",
            (since,),
        ).fetchone()
        return int(row[0]), float(row[1]), int(row[2])
    except sqlite3.Error:
        return 0, 0.0, 0
    finally:
        conn.close()


class SessionFigures:
    """One session's figures (a plain class: dataclasses cost the statusline ~10 ms of imports)."""

    def __init__(self) -> None:
        self.requests = 0
        self.context_tokens: int | None = None  # prompt tokens of the last request with usage
        self.cache_read: int | None = None
        self.saved_tokens = 0
        self.saved_usd = 0.0
        self.model: str | None = None

    @property
    def cache_share(self) -> float | None:
        if not self.context_tokens or self.cache_read is None:
            return None
        return self.cache_read / self.context_tokens


def session_figures(session_id: str, db: Path | None = None) -> SessionFigures:
    out = SessionFigures()
    conn = _connect(db)
    if conn is None or not session_id:
        return out
    try:
        row = conn.execute(
            "SELECT COUNT(*), COALESCE(SUM(realized_tokens),0), COALESCE(SUM(realized_usd),0) FROM requests WHERE session = ?",
            (session_id,),
        ).fetchone()
        out.requests, out.saved_tokens, out.saved_usd = int(row[0]), int(row[1]), float(row[2])
        last = conn.execute(
            "SELECT COALESCE(input_tokens,0) + COALESCE(cache_write_5m,0) + COALESCE(cache_write_1h,0) + COALESCE(cache_read,0),"
            " COALESCE(cache_read,0), model FROM requests WHERE session = ? AND input_tokens IS NOT NULL"
            " AND endpoint = 'messages' ORDER BY ts DESC, id DESC LIMIT 1",
            (session_id,),
        ).fetchone()
        if last is not None:
            out.context_tokens, out.cache_read, out.model = int(last[0]), int(last[1]), last[2]
    except sqlite3.Error:
        pass
    finally:
        conn.close()
    return out
