"""The surgery log (table ``cuts``, migration m002): every cut, keyed by tool_use_id.

It survives restarts, so a cut made before one is re-applied byte for byte
after it (a changed prefix would miss the cache). Look-ups happen on every
request for every tool result id in it, so the set of logged ids is kept in
memory (loaded once), only the ids that are in it are fetched from SQLite, and
records fetched once are kept (a conversation asks for the same ones on every
request). One process writes the log: the proxy that owns it. Frontends
read it through ``store/ledger_queries.py`` (``cut_entries``, ``cut_exists``).

Writing never stalls a request (``record_within``): the rows go to a worker
with its own connection (``store/offpath.py``), and the request waits for
them ``wait_s`` at most. Either the transaction is about to commit within the
bound - the cuts count as logged, they are sent, and a commit that fails after
that is retried off the path - or it is withdrawn before it commits and the
caller sends the request without the new cuts (a cut that was never sent must
leave no row to be re-applied later). Without a database path (``:memory:``,
the bench) rows are written at once, as before.
"""

from __future__ import annotations

import sqlite3
import threading
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterable

from scalpel_desktop.store.offpath import Worker


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


_INSERT = f"INSERT OR REPLACE INTO cuts ({_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?)"
# The writer's own busy wait per attempt: short, so a withdrawn write is dropped soon after.
WRITER_BUSY_S = 0.5


class _Commit:
    """Rows on their way to the log; ``state``: pending -> committing | withdrawn | failed."""

    __slots__ = ("rows", "state", "decided")

    def __init__(self, rows: list[tuple]):
        self.rows = rows
        self.state = "pending"
        self.decided = threading.Event()


class CutLog:
    def __init__(self, conn: sqlite3.Connection, path: Path | str | None = None, *, empty: bool = False):
        """``path``: the database file, for the writer's own connection (None: the file of ``conn``;
        an in-memory database is written on ``conn`` at once). ``empty``: the caller made this
        log just now, so it holds no cut (its first look-up needs no query: the bench's arms)."""
        self.conn = conn
        self._lock = threading.Lock()
        self._ids: set[str] | None = set() if empty else None
        self._cache: dict[str, CutRecord] = {}  # records looked up before (active conversations)
        self._learned: list[str] = []  # ids logged by this process, in order (surgery/ghost.py)
        self.path = str(path) if path is not None else _file_of(conn)
        self.worker = Worker("cutlog") if self.path else None
        self._wconn: sqlite3.Connection | None = None  # the worker's connection (opened on the worker)
        self._state_lock = threading.Lock()

    def _known(self) -> set[str]:
        if self._ids is None:
            self._ids = {r[0] for r in self.conn.execute("SELECT tool_use_id FROM cuts")}
        return self._ids

    def any_logged(self) -> bool:
        """Is there any cut in the log? (In memory once loaded.)"""
        with self._lock:
            return bool(self._known())

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

    def record_within(self, records: Iterable[CutRecord], wait_s: float | None) -> bool:
        """Log ``records`` if that can be decided within ``wait_s``; False: nothing was logged
        (the caller must not send these cuts). ``wait_s`` None: wait as long as it takes."""
        rows = [_as_row(c) for c in records]
        if not rows:
            return True
        if self.worker is None or wait_s is None:
            self.record_rows(rows)
            return True
        job = _Commit(rows)
        self.worker.submit(lambda: self._commit(job))
        job.decided.wait(wait_s)
        with self._state_lock:
            if job.state == "pending":
                job.state = "withdrawn"  # the worker rolls back when it gets there
            return job.state == "committing"

    def _commit(self, job: _Commit) -> None:
        """On the worker: write, then commit unless the request gave up waiting meanwhile."""
        with self._state_lock:
            if job.state != "pending":
                return
        conn = self._writer_conn()
        try:
            conn.execute("BEGIN IMMEDIATE")
            conn.executemany(_INSERT, job.rows)
        except sqlite3.Error:
            _rollback(conn)
            with self._state_lock:
                if job.state == "pending":
                    job.state = "failed"
            job.decided.set()
            return
        with self._state_lock:
            if job.state != "pending":
                _rollback(conn)
                return
            job.state = "committing"
        self._known_now(job.rows)
        job.decided.set()
        try:
            conn.commit()
        except sqlite3.Error:
            _rollback(conn)
            # Sent already: the rows must land. Retried off the path until they do.
            self.worker.submit(lambda: self._write(job.rows), retry=True)

    def _write(self, rows: list[tuple]) -> None:
        conn = self._writer_conn()
        try:
            with conn:
                conn.executemany(_INSERT, rows)
        except sqlite3.Error:
            _rollback(conn)
            raise

    def _writer_conn(self) -> sqlite3.Connection:
        if self._wconn is None:
            self._wconn = sqlite3.connect(self.path, timeout=WRITER_BUSY_S, check_same_thread=False,
                                          isolation_level=None)
        return self._wconn

    def mark(self) -> int:
        """How many cuts this process has logged so far (``learned_since`` takes it)."""
        with self._lock:
            return len(self._learned)

    def learned_since(self, mark: int) -> list[str]:
        """The ids of the cuts logged since ``mark``."""
        with self._lock:
            return self._learned[mark:]

    def _known_now(self, rows: list[tuple]) -> None:
        with self._lock:
            self._known().update(r[0] for r in rows)
            self._learned.extend(r[0] for r in rows)
            for r in rows:
                self._cache[r[0]] = CutRecord(*r)

    def flush(self, timeout: float = 10.0) -> bool:
        return self.worker.flush(timeout) if self.worker is not None else True

    def record(self, records: Iterable[CutRecord] | CutRecord) -> int:
        """Store cuts (one transaction). A re-cut id (its content changed) replaces the old row."""
        if isinstance(records, CutRecord):
            records = [records]
        return self.record_rows([_as_row(c) for c in records])

    def record_rows(self, rows: list[tuple]) -> int:
        if not rows:
            return 0
        with self._lock:
            with self.conn:
                self.conn.executemany(_INSERT, rows)
            if self._ids is not None:
                self._ids.update(r[0] for r in rows)
            self._learned.extend(r[0] for r in rows)
            for r in rows:
                self._cache.pop(r[0], None)
        return len(rows)

    def count(self) -> int:
        with self._lock:
            return int(self.conn.execute("SELECT COUNT(*) FROM cuts").fetchone()[0])



def _as_row(c: CutRecord) -> tuple:
    return (c.tool_use_id, c.session, c.agent, c.created_at, c.kind, c.tokens, c.original_sha256, c.stub_version,
            c.stub_sha256)


def _file_of(conn: sqlite3.Connection) -> str | None:
    """The file behind ``conn``'s main database; None in memory (or when it cannot be told)."""
    try:
        for row in conn.execute("PRAGMA database_list"):
            if row[1] == "main":
                return row[2] or None
    except sqlite3.Error:
        return None
    return None


def _rollback(conn: sqlite3.Connection) -> None:
    try:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
    except sqlite3.Error:
        pass
