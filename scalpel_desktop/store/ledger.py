"""Writes ledger rows off the event loop, and never lets a bad database hurt forwarding.

The proxy's event loop only calls ``submit(row)``: a ``put_nowait`` into a
bounded queue, which never blocks and never raises. A background thread owns
the SQLite connection and writes rows in small batches.

A database that cannot be written (locked past the busy timeout, read-only,
corrupt, disk full, a directory that cannot be created) turns recording off:
one warning is logged, ``enabled`` becomes False, ``last_error`` says why, and
every later ``submit`` is a cheap no-op. While a busy database is retried,
``busy_since`` says since when (the runtime shows it as "ledger locked"). Forwarding is never affected. A full
queue (the disk far slower than the traffic) drops the row and counts it.
"""

from __future__ import annotations

import logging
import queue
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Callable, Mapping

log = logging.getLogger("scalpel.ledger")

_STOP = object()


class LedgerWriter:
    def __init__(
        self,
        path: Path | str | None = None,
        *,
        queue_size: int = 10_000,
        batch_size: int = 200,
        busy_timeout_s: float = 5.0,
        retry_delays_s: tuple[float, ...] | None = None,
        on_open: Callable[[sqlite3.Connection], None] | None = None,
    ):
        """``on_open`` runs on the writer's connection right after it opens (tests use it
        to set ``PRAGMA max_page_count`` and so meet a real "disk full")."""
        if path is None:
            from scalpel_desktop.paths import dirs

            path = dirs().database
        self.path = Path(path)
        self.enabled = True
        self.last_error: str | None = None
        self.written = 0
        self.dropped = 0
        #: time.time() since which the database has been busy or locked by another program, while
        #: the writer retries (None when not): the runtime's status says "ledger locked" meanwhile.
        self.busy_since: float | None = None
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=queue_size)
        self._batch_size = batch_size
        self._busy_timeout_s = busy_timeout_s
        self._retry_delays_s = RETRY_DELAYS_S if retry_delays_s is None else tuple(retry_delays_s)
        self._on_open = on_open
        self._closed = False
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._pending = 0
        self._warned_full = False
        self._columns: frozenset[str] = frozenset()
        self._opened = threading.Event()  # set once the database was opened (or failed to)
        self._thread = threading.Thread(target=self._run, name="scalpel-ledger", daemon=True)
        self._thread.start()

    # -- called from the event loop ----------------------------------------

    def submit(self, row: Mapping[str, Any]) -> bool:
        """Queue one row; True when queued. Never blocks, never raises."""
        try:
            if not self.enabled or self._closed:
                return False
            with self._lock:
                self._pending += 1
            try:
                self._queue.put_nowait(dict(row))
            except queue.Full:
                with self._lock:
                    self._pending -= 1
                    self.dropped += 1
                    warn = not self._warned_full
                    self._warned_full = True
                if warn:
                    log.warning("ledger queue full: dropping rows (the database is slower than the traffic)")
                return False
            return True
        except Exception:  # noqa: BLE001 - recording must never hurt forwarding
            return False

    def flush(self, timeout: float | None = 10.0) -> bool:
        """Wait until the database is open and every queued row is written (or dropped);
        True when that happened within ``timeout``."""
        if not self._opened.wait(timeout):
            return False
        with self._idle:
            return self._idle.wait_for(lambda: self._pending == 0, timeout=timeout)

    def close(self, timeout: float = 10.0) -> None:
        """Write what is queued, then stop the thread and close the database."""
        if self._closed:
            return
        self._closed = True
        try:
            self._queue.put(_STOP, timeout=timeout)
        except queue.Full:
            pass
        self._thread.join(timeout)

    @property
    def pending(self) -> int:
        """Rows queued and not written yet."""
        with self._lock:
            return self._pending

    def status(self) -> dict[str, Any]:
        return {
            "enabled": self.enabled,
            "path": str(self.path),
            "written": self.written,
            "dropped": self.dropped,
            "pending": self.pending,
            "busy_since": self.busy_since,
            "last_error": self.last_error,
        }

    # -- the writer thread ---------------------------------------------------

    def _run(self) -> None:
        conn = self._retrying(self._open)
        self._opened.set()
        try:
            while True:
                item = self._queue.get()
                if item is _STOP:
                    break
                batch = [item]
                stop = False
                while len(batch) < self._batch_size:
                    try:
                        nxt = self._queue.get_nowait()
                    except queue.Empty:
                        break
                    if nxt is _STOP:
                        stop = True
                        break
                    batch.append(nxt)
                if conn is not None and self.enabled:
                    conn = self._retrying(lambda: self._write(conn, batch))
                self._done(len(batch))
                if stop:
                    break
        finally:
            self._drain()
            if conn is not None:
                try:
                    conn.close()
                except sqlite3.Error:
                    pass

    def _open(self) -> sqlite3.Connection | None:
        from scalpel_desktop.private_files import prepare_sqlite_file
        from scalpel_desktop.store.db import prepare

        conn = None
        try:
            prepare_sqlite_file(self.path)  # 0600, and so its -wal/-shm
            conn = sqlite3.connect(self.path, timeout=self._busy_timeout_s)
            prepare(conn)
            conn.isolation_level = None  # explicit BEGIN/COMMIT per batch from here on
            if self._on_open is not None:
                self._on_open(conn)
            self._columns = frozenset(r[1] for r in conn.execute("PRAGMA table_info(requests)"))
            if not self._columns:
                raise sqlite3.DatabaseError("no requests table after migrations")
            return conn
        except (sqlite3.Error, OSError) as e:
            if conn is not None:
                try:
                    conn.close()
                except sqlite3.Error:
                    pass
            if _transient(e):
                raise
            self._disable(e)
            return None

    def _write(self, conn: sqlite3.Connection, batch: list[dict[str, Any]]) -> sqlite3.Connection | None:
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                for row in batch:
                    cols = [c for c in row if c in self._columns and c != "id"]
                    conn.execute(
                        f"INSERT INTO requests ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                        [_scalar(row[c]) for c in cols],
                    )
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            self.written += len(batch)
            return conn
        except (sqlite3.Error, OSError, ValueError, TypeError) as e:
            if _transient(e):
                raise
            self._disable(e)
            try:
                conn.close()
            except sqlite3.Error:
                pass
            return None

    def _retrying(self, step: Callable[[], sqlite3.Connection | None]) -> sqlite3.Connection | None:
        """Run ``step``; a busy or locked database (another writer holding the lock
        past the busy timeout: the tool inventory and the surgery log share this
        file) is retried with backoff before recording is turned off."""
        try:
            for delay in self._retry_delays_s:
                try:
                    return step()
                except sqlite3.OperationalError as e:
                    if self.busy_since is None:  # the try that just failed waited the busy timeout first
                        self.busy_since = time.time() - self._busy_timeout_s
                    log.info("ledger busy (%s); retrying in %.1f s", e, delay)
                    time.sleep(delay)
            try:
                return step()
            except sqlite3.OperationalError as e:
                self._disable(e)
                return None
        finally:
            self.busy_since = None

    def _disable(self, e: BaseException) -> None:
        if not self.enabled:
            return
        self.enabled = False
        self.last_error = f"{type(e).__name__}: {e}"
        log.warning("ledger recording turned off (%s): %s; the proxy keeps forwarding", self.path, self.last_error)

    def _done(self, n: int) -> None:
        with self._idle:
            self._pending -= n
            self._idle.notify_all()

    def _drain(self) -> None:
        """Discard whatever is still queued (after a stop or a failure)."""
        n = 0
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if item is not _STOP:
                n += 1
        if n:
            self._done(n)


def _scalar(v: Any) -> Any:
    """A value SQLite can store; anything else (a stray dict, bytes) becomes NULL, not an error."""
    if v is None or isinstance(v, (int, float, str)):
        return v
    return None


RETRY_DELAYS_S = (0.2, 0.5, 1.0, 2.0)


def _transient(e: BaseException) -> bool:
    """A busy/locked database: worth another try, unlike read-only, corrupt or full."""
    msg = str(e).lower()
    return isinstance(e, sqlite3.OperationalError) and ("locked" in msg or "busy" in msg)
