"""Writes ledger rows off the event loop: a locked or broken database never hurts forwarding, nor loses a row.

The proxy's event loop only calls ``submit(row)``: the row gets its ``uid``
(migration m009) and is put on a queue; nothing there blocks, raises or
touches the disk. A background thread owns the SQLite connection and writes
rows in small batches with ``INSERT OR IGNORE`` (a row that already reached
the database is never written again).

When the database cannot be written now:

- locked or busy (another program holds its write lock: a sqlite3 shell in
  ``BEGIN EXCLUSIVE``, a backup or sync tool; or it cannot be migrated yet):
  ``busy_since`` says since when (the status says "ledger locked"); rows wait
  in memory (``memory_rows`` of them, ``memory_wait_s`` at most), then in the
  journal beside the ledger (``store/row_journal.py``, fsynced); the database
  is tried again with backoff (``retry_delays_s``, the last one repeated) for
  as long as the lock lasts, and when it frees the journal is written, then
  the rest. A lock never turns recording off, whatever its length.
- anything else (read-only, corrupt, full, a folder in the way): one warning,
  ``enabled`` False and ``last_error`` say why ("recording off"); the rows go
  to the journal all the same, and the database is tried again every
  ``reopen_s``: once it takes rows (the broken file moved aside, space freed)
  recording is back on, with one more line in the log, and the journal written.

Stop: ``close(timeout)`` writes what waits if the database takes it in the
time left, else journals it, and returns within ``timeout``; if the thread is
stuck even so (a disk that hangs), the caller journals every row not yet
settled itself (a row in both places is written once: its uid). ``hurry()``
(a second Ctrl-C) skips the database at the stop. ``whole`` says whether every
row given reached the database.

Rows are dropped (``dropped``, one warning) only when ``queue_size`` rows are
unsettled at once (a writer stuck that long) or the journal cannot take them
either (a full disk, its 64 MB bound). Durability: WAL with ``synchronous=NORMAL``:
a committed row survives the process being killed, not always a power cut; a
journaled row survives both."""

from __future__ import annotations

import logging
import queue
import sqlite3
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Callable, Mapping

from scalpel_desktop.store.row_journal import MAX_BYTES, RowJournal, journal_path

log = logging.getLogger("scalpel.ledger")

_STOP = object()
RETRY_DELAYS_S = (0.2, 0.5, 1.0, 2.0)
STOP_MARGIN_S = 0.3  # of a close's time, kept for the journal when the database does not answer


class LedgerWriter:
    def __init__(
        self,
        path: Path | str | None = None,
        *,
        queue_size: int = 10_000,
        batch_size: int = 200,
        busy_timeout_s: float = 0.5,
        retry_delays_s: tuple[float, ...] | None = None,
        memory_rows: int = 1000,
        memory_wait_s: float = 5.0,
        reopen_s: float = 30.0,
        journal_max_bytes: int = MAX_BYTES,
        on_open: Callable[[sqlite3.Connection], None] | None = None,
    ):
        """``on_open`` runs on the writer's connection right after it opens (tests use it
        to set ``PRAGMA max_page_count`` and so meet a real "disk full")."""
        if path is None:
            from scalpel_desktop.paths import dirs

            path = dirs().database
        self.path = Path(path)
        self.journal = RowJournal(journal_path(self.path), journal_max_bytes)
        self.enabled = True
        self.last_error: str | None = None
        self.written = 0
        self.dropped = 0
        #: time.time() since which the database has been locked or busy (None when not): the
        #: runtime's status says "ledger locked" meanwhile, with the rows waiting.
        self.busy_since: float | None = None
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._queue_size = queue_size
        self._batch_size = batch_size
        self._busy_timeout_s = busy_timeout_s
        self._retry_delays_s = tuple(retry_delays_s) if retry_delays_s else RETRY_DELAYS_S
        self._memory_rows, self._memory_wait_s, self._reopen_s = memory_rows, memory_wait_s, reopen_s
        self._on_open = on_open
        self._closed = self._hurry = False
        self._deadline = float("inf")  # monotonic; set by close()
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._unsettled: dict[str, dict[str, Any]] = {}  # uid -> row: in neither the database nor the journal
        self._warned: set[str] = set()
        self._columns: frozenset[str] = frozenset()
        # The writer thread's own state.
        self._conn: sqlite3.Connection | None = None
        self._waiting: list[dict[str, Any]] = []
        self._waiting_since = self._next_try = 0.0
        self._tries = 0
        self._opened = threading.Event()  # set once the database was first tried
        self._thread = threading.Thread(target=self._run, name="scalpel-ledger", daemon=True)
        self._thread.start()

    # -- called from the event loop ----------------------------------------

    def submit(self, row: Mapping[str, Any]) -> bool:
        """Queue one row; True when queued. Never blocks, never raises, never waits on the disk."""
        try:
            if self._closed:
                return False
            r = dict(row)
            if not isinstance(r.get("uid"), str):
                r["uid"] = uuid.uuid4().hex
            with self._lock:
                full = len(self._unsettled) >= self._queue_size
                if full:
                    self.dropped += 1
                else:
                    self._unsettled[r["uid"]] = r
            if full:
                self._warn_once("full", "ledger queue full: dropping rows (the writer is stuck: see above)")
                return False
            self._queue.put(r)
            return True
        except Exception:  # noqa: BLE001 - recording must never hurt forwarding
            return False

    def flush(self, timeout: float | None = 10.0) -> bool:
        """Wait until every row given so far is in the database (none in memory or the journal);
        True when that happened within ``timeout``."""
        if not self._opened.wait(timeout):
            return False
        with self._idle:
            return self._idle.wait_for(lambda: not self._unsettled and not self.journal.rows, timeout=timeout)

    def hurry(self) -> None:
        """Stopping in a hurry (a second Ctrl-C or SIGTERM): the stop journals what waits at once."""
        self._hurry = True

    def close(self, timeout: float = 10.0) -> None:
        """Write or journal what waits, stop the thread, close the database: within ``timeout``."""
        if self._closed:
            return
        self._closed = True
        self._deadline = time.monotonic() + timeout
        self._queue.put(_STOP)
        self._thread.join(max(0.0, timeout - STOP_MARGIN_S / 2))
        if self._thread.is_alive():
            with self._lock:
                rows = list(self._unsettled.values())
            if rows and self.journal.append(rows):
                self._settle(rows)
            log.warning("the ledger writer did not stop in %.1f s; %d row(s) journaled from here "
                        "(written at the next start)", timeout, len(rows))

    @property
    def pending(self) -> int:
        """Rows given and kept in memory only (in neither the database nor the journal)."""
        with self._lock:
            return len(self._unsettled)

    @property
    def journaled(self) -> int:
        """Rows waiting in the journal beside the ledger."""
        return self.journal.rows

    @property
    def whole(self) -> bool:
        """Did every row given reach the database (none dropped, none waiting)?"""
        return self.enabled and not self.dropped and not self.pending and not self.journaled

    def status(self) -> dict[str, Any]:
        return {"enabled": self.enabled, "path": str(self.path), "written": self.written, "dropped": self.dropped,
                "pending": self.pending, "journaled": self.journaled, "journal": str(self.journal.path),
                "busy_since": self.busy_since, "last_error": self.last_error}

    # -- the writer thread ---------------------------------------------------

    def _run(self) -> None:
        try:
            self._try_database()
            self._opened.set()
            while not self._take(self._wait_s()):
                if time.monotonic() >= self._next_try:
                    self._try_database()
                self._journal_if_due()
        except Exception:  # noqa: BLE001 - a bug here must not take the rows with it
            log.exception("the ledger writer failed; what waits goes to the journal")
        self._opened.set()
        self._final()

    def _wait_s(self) -> float | None:
        """How long to wait for new rows before the next try (None: until one comes)."""
        if not self._waiting and not self.journal.rows and self._conn is not None:
            return None
        now = time.monotonic()
        wait = max(0.0, self._next_try - now)
        journal_at = self._waiting_since + self._memory_wait_s
        if self._waiting and journal_at > now:  # (past it and still here: the journal refused; next try)
            wait = min(wait, journal_at - now)
        return wait

    def _take(self, timeout: float | None) -> bool:
        """Move what the queue holds to ``_waiting`` (waiting ``timeout`` for the first); True at the stop."""
        try:
            item = self._queue.get(timeout=timeout) if timeout is None or timeout > 0 else self._queue.get_nowait()
        except queue.Empty:
            return False
        while True:
            if item is _STOP:
                return True
            if not self._waiting:
                self._waiting_since = time.monotonic()
            self._waiting.append(item)
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return False

    def _try_database(self) -> None:
        try:
            if self._conn is None:
                self._conn = self._open()
            self._replay()  # the journal first: its rows are the older ones
            self._write_waiting()
            self._recovered()
        except (sqlite3.Error, OSError, ValueError, TypeError) as e:
            self._failed(e)

    def _open(self) -> sqlite3.Connection:
        from scalpel_desktop.private_files import prepare_sqlite_file
        from scalpel_desktop.store.db import prepare

        conn = None
        try:
            prepare_sqlite_file(self.path)  # 0600, and so its -wal/-shm
            conn = sqlite3.connect(self.path, timeout=self._busy_timeout_s, check_same_thread=False)
            prepare(conn, lock_timeout=self._busy_timeout_s)
            conn.isolation_level = None  # explicit BEGIN/COMMIT per batch from here on
            if self._on_open is not None:
                self._on_open(conn)
            self._columns = frozenset(r[1] for r in conn.execute("PRAGMA table_info(requests)"))
            if not self._columns:
                raise sqlite3.DatabaseError("no requests table after migrations")
            return conn
        except BaseException:
            if conn is not None:
                conn.close()
            raise

    def _insert(self, rows: list[dict[str, Any]]) -> None:
        conn = self._conn
        assert conn is not None
        before = conn.total_changes
        conn.execute("BEGIN IMMEDIATE")
        try:
            for row in rows:
                cols = [c for c in row if c in self._columns and c != "id"]
                conn.execute(
                    f"INSERT OR IGNORE INTO requests ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                    [_scalar(row[c]) for c in cols],
                )
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        self.written += conn.total_changes - before

    def _write_waiting(self) -> None:
        while self._waiting:
            batch = self._waiting[: self._batch_size]
            self._insert(batch)
            del self._waiting[: len(batch)]
            self._settle(batch)

    def _replay(self) -> None:
        """Write the journal's rows (each once: ``INSERT OR IGNORE`` by uid), then forget them."""
        if not self.journal.rows and not self.journal.taken_path.exists():
            return
        for _ in range(2):  # a taken file a failed try left behind, then the journal appended since
            for batch in self.journal.take(self._batch_size):
                self._insert(batch)
            self.journal.done()
        with self._idle:
            self._idle.notify_all()
        log.info("ledger: the journal's rows are written (%s)", self.journal.path)

    def _failed(self, e: BaseException) -> None:
        if _transient(e):
            if self.busy_since is None:  # the try that just failed waited the busy timeout first
                self.busy_since = time.time() - self._busy_timeout_s
                log.info("ledger locked (%s): rows wait, then go to the journal %s", e, self.journal.path)
            delay = self._retry_delays_s[min(self._tries, len(self._retry_delays_s) - 1)]
            self._tries += 1
        else:
            self._close_conn()
            self.busy_since = None
            if self.enabled:
                self.enabled = False
                self.last_error = f"{type(e).__name__}: {e}"
                log.warning("ledger recording off (%s): %s; rows go to the journal %s and the ledger is tried "
                            "again every %.0f s; the proxy keeps forwarding", self.path, self.last_error,
                            self.journal.path, self._reopen_s)
            delay = self._reopen_s
        self._next_try = time.monotonic() + delay

    def _recovered(self) -> None:
        if self.busy_since is not None:
            log.info("ledger free again after %.0f s", time.time() - self.busy_since)
        self.busy_since = None
        self._tries = 0
        # (a journal still there could not be taken, e.g. not renamed: tried again, not in a loop)
        self._next_try = 0.0 if not self.journal.rows else time.monotonic() + self._reopen_s
        if not self.enabled:
            self.enabled, self.last_error = True, None
            log.warning("ledger recording back on (%s)", self.path)

    def _journal_if_due(self) -> None:
        """Rows that waited long enough, or too many, go to the journal (kept in memory if it refuses)."""
        if not self._waiting:
            return
        due = len(self._waiting) > self._memory_rows or \
            time.monotonic() - self._waiting_since >= self._memory_wait_s
        if due:
            self._journal_waiting()

    def _journal_waiting(self) -> bool:
        rows = self._waiting
        if self.journal.append(rows):
            self._waiting = []
            self._settle(rows)
            return True
        self._warn_once("journal", f"ledger: rows cannot be journaled either ({self.journal.last_error}); "
                                   "they wait in memory")
        return False

    def _final(self) -> None:
        """At the stop: what waits goes to the database if it takes it in the time left, else to the journal."""
        while self._take(0):  # rows submitted up to the stop (and any that raced behind its marker)
            pass
        left = self._deadline - time.monotonic() - STOP_MARGIN_S
        if self._waiting and not self._hurry and left > 0.05:
            self._busy_timeout_s = min(self._busy_timeout_s, left / 2)
            try:
                if self._conn is not None:
                    self._conn.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout_s * 1000)}")
                else:
                    self._conn = self._open()
                self._write_waiting()
            except (sqlite3.Error, OSError, ValueError, TypeError) as e:
                self._failed(e)  # (said as while running: recording off, or locked)
        if self._waiting and self.journal.append(self._waiting):
            self._settle(self._waiting)
        elif self._waiting:
            n = len(self._waiting)
            self._settle(self._waiting)
            with self._lock:
                self.dropped += n
            log.warning("ledger: %d row(s) lost at the stop: neither the ledger nor the journal took them", n)
        self._waiting = []
        self._close_conn()

    def _close_conn(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    def _settle(self, rows: list[dict[str, Any]]) -> None:
        with self._idle:
            for r in rows:
                self._unsettled.pop(r.get("uid"), None)
            self._idle.notify_all()

    def _warn_once(self, what: str, message: str) -> None:
        if what not in self._warned:
            self._warned.add(what)
            log.warning(message)


def _scalar(v: Any) -> Any:
    """A value SQLite can store; anything else (a stray dict, bytes) becomes NULL, not an error."""
    if v is None or isinstance(v, (int, float, str)):
        return v
    return None


def _transient(e: BaseException) -> bool:
    """A busy/locked database: worth another try soon, unlike read-only, corrupt or full."""
    msg = str(e).lower()
    return isinstance(e, sqlite3.OperationalError) and ("locked" in msg or "busy" in msg)
