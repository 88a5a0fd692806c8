"""The tools tables (migration m003) behind one small, thread-safe object.

Every write is a short transaction under one lock, so the proxy's stages, the
CLI and the control API can share the database file (SQLite WAL) safely.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from scalpel_desktop.store.db import connect

SOURCES = ("cli", "tray", "dashboard", "control_api")


@dataclass(frozen=True)
class Pin:
    session: str
    pinned_at: float
    enabled: bool
    names: frozenset[str]


@dataclass(frozen=True)
class Declared:
    name: str
    kind: str
    server: str | None
    tokens: int
    summary: str = ""


class ToolStore:
    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn
        self.lock = threading.RLock()

    @classmethod
    def open(cls, path: Path | None = None) -> "ToolStore":
        """Open (and migrate) the ledger database. Another process or thread migrating the
        same file at the same moment makes ``migrate`` fail once; the retry then finds it done."""
        for attempt in range(5):
            try:
                return cls(connect(path))
            except (sqlite3.IntegrityError, sqlite3.OperationalError):
                if attempt == 4:
                    raise
                time.sleep(0.05 * (attempt + 1))
        raise AssertionError("unreachable")

    def close(self) -> None:
        with self.lock:
            self.conn.close()

    # -- the removal list ---------------------------------------------------------------
    def removals(self) -> dict[str, dict]:
        with self.lock:
            rows = self.conn.execute("SELECT name, added_at, source, forced FROM tool_removals ORDER BY name").fetchall()
        return {r[0]: {"name": r[0], "added_at": r[1], "source": r[2], "forced": bool(r[3])} for r in rows}

    def add_removal(self, name: str, source: str, forced: bool, now: float | None = None) -> bool:
        _check_source(source)
        now = time.time() if now is None else now
        with self.lock, self.conn:
            cur = self.conn.execute(
                "INSERT OR IGNORE INTO tool_removals (name, added_at, source, forced) VALUES (?, ?, ?, ?)",
                (name, now, source, int(forced)),
            )
            if cur.rowcount:
                self._record(now, "remove", name, source, "forced" if forced else "")
            return bool(cur.rowcount)

    def drop_removal(self, name: str, source: str, now: float | None = None) -> bool:
        _check_source(source)
        now = time.time() if now is None else now
        with self.lock, self.conn:
            cur = self.conn.execute("DELETE FROM tool_removals WHERE name = ?", (name,))
            if cur.rowcount:
                self._record(now, "restore", name, source, "")
            return bool(cur.rowcount)

    def record(self, action: str, name: str, source: str, detail: str = "", now: float | None = None) -> None:
        _check_source(source)
        with self.lock, self.conn:
            self._record(time.time() if now is None else now, action, name, source, detail)

    def _record(self, now: float, action: str, name: str, source: str, detail: str) -> None:
        self.conn.execute(
            "INSERT INTO tool_removal_history (ts, action, name, source, detail) VALUES (?, ?, ?, ?, ?)",
            (now, action, name, source, detail),
        )

    def history(self, limit: int | None = None) -> list[dict]:
        sql = "SELECT ts, action, name, source, detail FROM tool_removal_history ORDER BY id DESC"
        with self.lock:
            rows = self.conn.execute(sql + (f" LIMIT {int(limit)}" if limit else "")).fetchall()
        return [dict(zip(("ts", "action", "name", "source", "detail"), r)) for r in reversed(rows)]

    # -- session pins ----------------------------------------------------------------
    def get_pin(self, session: str) -> Pin | None:
        with self.lock:
            r = self.conn.execute(
                "SELECT session, pinned_at, enabled, names FROM tool_session_pins WHERE session = ?", (session,)
            ).fetchone()
        return None if r is None else Pin(r[0], r[1], bool(r[2]), frozenset(json.loads(r[3])))

    def nonempty_pins(self) -> list[str]:
        """Sessions whose pin removes something (every other session's pin is empty or absent)."""
        with self.lock:
            return [r[0] for r in self.conn.execute("SELECT session FROM tool_session_pins WHERE names != '[]'")]

    def create_pin(self, session: str, enabled: bool, names: Iterable[str], now: float | None = None) -> Pin:
        """Pin ``names`` for ``session`` unless a pin exists already; return the stored pin."""
        now = time.time() if now is None else now
        with self.lock, self.conn:
            self.conn.execute(
                "INSERT OR IGNORE INTO tool_session_pins (session, pinned_at, enabled, names) VALUES (?, ?, ?, ?)",
                (session, now, int(enabled), json.dumps(sorted(set(names)))),
            )
        pin = self.get_pin(session)
        assert pin is not None
        return pin

    def clear_pin(self, session: str) -> Pin:
        """Make ``session``'s pin empty (its first request went out unfiltered); return it."""
        with self.lock, self.conn:
            self.conn.execute("UPDATE tool_session_pins SET names = '[]', enabled = 0 WHERE session = ?", (session,))
        pin = self.get_pin(session)
        assert pin is not None
        return pin

    def repin(self, sessions: Iterable[str], names: Iterable[str], source: str) -> int:
        """Replace the pinned set of existing sessions (the user asked for it)."""
        names_json = json.dumps(sorted(set(names)))
        n = 0
        with self.lock, self.conn:
            for s in sessions:
                n += self.conn.execute(
                    "UPDATE tool_session_pins SET names = ?, enabled = 1 WHERE session = ?", (names_json, s)
                ).rowcount
            self._record(time.time(), "repin", "", source, f"{n} session(s)")
        return n

    def pinned_sessions(self, since: float = 0.0) -> list[str]:
        with self.lock:
            return [r[0] for r in self.conn.execute(
                "SELECT session FROM tool_session_pins WHERE pinned_at >= ? ORDER BY pinned_at", (since,))]

    # -- inventory -----------------------------------------------------------------
    def save_inventory(self, session: str, client: str, model: str, now: float,
                       declared: list[Declared] | None, calls: list[tuple[str, str]], new_request: bool,
                       targets: dict[str, str] | None = None) -> None:
        """``targets``: tool_use id -> the file that call worked on (``inventory.call_targets``)."""
        with self.lock, self.conn:
            self.conn.execute(
                """INSERT INTO tool_sessions (session, client, model, first_seen, last_seen, requests)
                   VALUES (?, ?, ?, ?, ?, ?)
                   ON CONFLICT(session) DO UPDATE SET last_seen = MAX(last_seen, excluded.last_seen),
                     requests = requests + excluded.requests,
                     model = CASE WHEN excluded.model != '' THEN excluded.model ELSE model END""",
                (session, client[:200], model[:100], now, now, int(new_request)),
            )
            if declared is not None:
                self.conn.executemany(
                    """INSERT INTO tool_declarations (session, name, kind, server, tokens, summary, first_seen, last_seen)
                       VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                       ON CONFLICT(session, name) DO UPDATE SET last_seen = excluded.last_seen,
                         tokens = excluded.tokens, kind = excluded.kind""",
                    [(session, d.name, d.kind, d.server, d.tokens, d.summary[:200], now, now) for d in declared],
                )
            if calls:
                self.conn.executemany(
                    "INSERT OR IGNORE INTO tool_calls (session, tool_use_id, name, ts) VALUES (?, ?, ?, ?)",
                    [(session, cid, name, now) for cid, name in calls],
                )
                if targets:
                    self.conn.executemany(
                        "UPDATE tool_calls SET target = ? WHERE session = ? AND tool_use_id = ? AND target IS NULL",
                        [(t, session, cid) for cid, t in targets.items()],
                    )

    def add_savings(self, rows: list[tuple]) -> None:
        """rows: (ts, session, agent, model, name, tokens, tier, usd)."""
        with self.lock, self.conn:
            self.conn.executemany(
                "INSERT INTO tool_filter_savings (ts, session, agent, model, name, tokens, tier, usd) VALUES (?,?,?,?,?,?,?,?)",
                rows,
            )

    def version(self) -> tuple:
        """Changes whenever the inventory or the removal list changes (the dashboard
        re-reads only then); () before the tools tables exist."""
        with self.lock:
            have = {r[0] for r in self.conn.execute(
                "SELECT name FROM sqlite_master WHERE type='table' AND name IN ('tool_removal_history','tool_sessions')")}
            if len(have) < 2:
                return ()
            return (self.conn.execute("SELECT COALESCE(MAX(id), 0) FROM tool_removal_history").fetchone()[0],
                    self.conn.execute("SELECT COUNT(*), MAX(last_seen) FROM tool_sessions").fetchone())

    def query(self, sql: str, args: tuple = ()) -> list[tuple]:
        with self.lock:
            return self.conn.execute(sql, args).fetchall()


def _check_source(source: str) -> None:
    if source not in SOURCES:
        raise ValueError(f"source {source!r} is not one of {', '.join(SOURCES)}")
