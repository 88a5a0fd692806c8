"""The surgery log (table ``cuts``, migration m002): every cut, keyed by tool_use_id.

It survives restarts, so a cut made before one is re-applied byte for byte
after it (a changed prefix would miss the cache). Look-ups happen on every
request for every tool result id in it, so the set of logged ids is kept in
memory (loaded once), only the ids that are in it are fetched from SQLite, and
records fetched once are kept (a conversation asks for the same ones on every
request). One process writes the log: the proxy that owns it. Frontends
read it through ``store/ledger_queries.py`` (``cut_entries``, ``cut_exists``).
"""

from __future__ import annotations

import sqlite3
import threading
from dataclasses import asdict, dataclass
from typing import Iterable


@dataclass(frozen=True)
class CutRecord:
    tool_use_id: str
    session: str
    agent: str
    created_at: float
    kind: str
    tokens: int
    original_sha256: str
    stub_version: int
    stub_sha256: str

    def as_dict(self) -> dict:
        return asdict(self)


_CACHE_MAX = 200_000
_COLUMNS = "tool_use_id, session, agent, created_at, kind, tokens, original_sha256, stub_version, stub_sha256"


def _row(r: sqlite3.Row | tuple) -> CutRecord:
    return CutRecord(str(r[0]), r[1] or "", r[2] or "", float(r[3]), r[4], int(r[5]), r[6], int(r[7]), r[8])


class CutLog:
    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn
        self._lock = threading.Lock()
        self._ids: set[str] | None = None
        self._cache: dict[str, CutRecord] = {}  # records looked up before (active conversations)

    def _known(self) -> set[str]:
        if self._ids is None:
            self._ids = {r[0] for r in self.conn.execute("SELECT tool_use_id FROM cuts")}
        return self._ids

    def any_known(self, ids: Iterable[str]) -> bool:
        """Is any of ``ids`` in the log? (The in-memory id set: no query once loaded.)"""
        with self._lock:
            known = self._known()
            return any(i in known for i in ids)

    def lookup(self, ids: Iterable[str]) -> dict[str, CutRecord]:
        """The logged cuts among ``ids``."""
        with self._lock:
            known = self._known()
            cache = self._cache
            out: dict[str, CutRecord] = {}
            missing: list[str] = []
            for i in ids:
                if i in known:
                    rec = cache.get(i)
                    if rec is None:
                        missing.append(i)
                    else:
                        out[i] = rec
            for start in range(0, len(missing), 500):
                chunk = missing[start : start + 500]
                q = f"SELECT {_COLUMNS} FROM cuts WHERE tool_use_id IN ({','.join('?' * len(chunk))})"
                for r in self.conn.execute(q, chunk):
                    rec = _row(r)
                    out[rec.tool_use_id] = cache[rec.tool_use_id] = rec
            if len(cache) > _CACHE_MAX:
                cache.clear()
            return out

    def record(self, records: Iterable[CutRecord] | CutRecord) -> int:
        """Store cuts (one transaction). A re-cut id (its content changed) replaces the old row."""
        if isinstance(records, CutRecord):
            records = [records]
        rows = [
            (c.tool_use_id, c.session, c.agent, c.created_at, c.kind, c.tokens, c.original_sha256, c.stub_version, c.stub_sha256)
            for c in records
        ]
        if not rows:
            return 0
        with self._lock:
            with self.conn:
                self.conn.executemany(f"INSERT OR REPLACE INTO cuts ({_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?)", rows)
            if self._ids is not None:
                self._ids.update(r[0] for r in rows)
            for r in rows:
                self._cache.pop(r[0], None)
        return len(rows)

    def count(self) -> int:
        with self._lock:
            return int(self.conn.execute("SELECT COUNT(*) FROM cuts").fetchone()[0])

