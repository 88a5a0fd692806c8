"""One background thread that runs the tools' database writes off the proxy's loop.

Stages hand it small callables; a full queue drops the write (an inventory row
is not worth slowing a request for) and counts the drop. ``flush`` waits until
everything queued so far has run (tests, shutdown); its own marker waits for
room rather than being dropped, so a full queue that drains in time still
flushes (it used to wait out its whole timeout and say it had not).

A write that meets a database locked by another program (a sqlite3 shell in
``BEGIN EXCLUSIVE``, a backup tool) is tried again, with backoff, for as long
as the lock lasts (each write is one transaction: a failed one left nothing):
one line in the log per lock, no traceback, no write dropped for it. Only a
stop gives up on it (``close``'s timeout), counted in ``failed``.
"""

from __future__ import annotations

import logging
import queue
import threading
import sqlite3
import time
from typing import Any, Callable

log = logging.getLogger("scalpel.tools")

RETRY_DELAYS_S = (0.1, 0.25, 0.5, 1.0, 2.0)  # the last one repeated while the lock lasts


class BackgroundWriter:
    def __init__(self, maxsize: int = 10000):
        self._q: queue.Queue = queue.Queue(maxsize=maxsize)
        self.dropped = 0
        self.failed = 0
        self.locked_since: float | None = None  # a write waits on another program's lock since (monotonic)
        self._give_up_at: float | None = None  # set by ``close``: a locked write is not retried past it
        self._thread = threading.Thread(target=self._run, name="scalpel-tools-writer", daemon=True)
        self._thread.start()

    def submit(self, fn: Callable[..., Any], *args: Any) -> None:
        try:
            self._q.put_nowait((fn, args))
        except queue.Full:
            self.dropped += 1

    def flush(self, timeout: float = 10.0) -> bool:
        """True once everything queued before the call has run, within ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        done = threading.Event()
        try:
            self._q.put((done.set, ()), timeout=timeout)  # never from the request path: it may wait
        except queue.Full:
            return False
        return done.wait(max(0.0, deadline - time.monotonic()))

    def close(self, timeout: float = 10.0) -> None:
        self._give_up_at = time.monotonic() + timeout
        self.flush(timeout)
        self._q.put((None, ()))
        self._thread.join(timeout)

    def _run(self) -> None:
        while True:
            fn, args = self._q.get()
            if fn is None:
                return
            self._call(fn, args)

    def _call(self, fn: Callable[..., Any], args: tuple) -> None:
        tries = 0
        while True:
            try:
                fn(*args)
            except sqlite3.OperationalError as e:
                if not _locked(e) or (self._give_up_at is not None and time.monotonic() >= self._give_up_at):
                    self.failed += 1
                    log.warning("tools: a background write failed (%s)", e)
                    return
                if self.locked_since is None:
                    self.locked_since = time.monotonic()
                    log.info("tools: the database is locked by another program (%s); writes wait and go on", e)
                time.sleep(RETRY_DELAYS_S[min(tries, len(RETRY_DELAYS_S) - 1)])
                tries += 1
                continue
            except Exception:  # noqa: BLE001 - a failed write never reaches the request
                self.failed += 1
                log.exception("tools: background write failed")
            if self.locked_since is not None:
                log.info("tools: the database is free again after %.0f s", time.monotonic() - self.locked_since)
                self.locked_since = None
            return


def _locked(e: BaseException) -> bool:
    msg = str(e).lower()
    return "locked" in msg or "busy" in msg
