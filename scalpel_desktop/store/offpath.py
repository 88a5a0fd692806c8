"""Writes the request path needs, waited on for a bound only: a locked or slow disk never stalls a request.

A pin, a cut-log row, a spill file: a request that needs one waits for it at
most ``write_wait_ms`` (50 ms by default). Each resource has one ``Worker``:
a daemon thread that runs its jobs in order, so a write blocked on a SQLite
lock held by another process, on a FUSE or network home, or on a full disk
blocks that thread and nothing else. The request path submits, waits on the
job's outcome with a timeout, and when the bound passes goes on without what
the write was for (fail open: the caller decides what "without" means). A
job submitted with ``retry`` is retried with backoff until it succeeds (the
write is not lost when the lock is released); a worker with a job still
running is ``busy``, and a caller can skip waiting altogether then.
"""

from __future__ import annotations

import logging
import queue
import sqlite3
import threading
from typing import Any, Callable

log = logging.getLogger("scalpel.store")

RETRY_FIRST_S = 0.05
RETRY_MAX_S = 2.0
# What a retried job may meet while the disk or the database is not ready; anything else is a bug: logged, dropped.
RETRYABLE = (sqlite3.OperationalError, OSError)


class Job:
    """One submitted write: ``wait(timeout)`` -> done in time?; then ``result`` or ``error``."""

    __slots__ = ("fn", "retry", "result", "error", "attempts", "_done")

    def __init__(self, fn: Callable[[], Any], retry: bool):
        self.fn = fn
        self.retry = retry
        self.result: Any = None
        self.error: BaseException | None = None
        self.attempts = 0
        self._done = threading.Event()

    @property
    def done(self) -> bool:
        return self._done.is_set()

    def wait(self, timeout: float | None) -> bool:
        return self._done.wait(timeout)


class Worker:
    def __init__(self, name: str):
        self.name = name
        self._q: queue.Queue = queue.Queue()
        self._pending = 0  # submitted and not finished
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.retried = 0  # attempts that failed and were retried (tests, the benchmark)

    @property
    def busy(self) -> bool:
        """Is a job still queued or running? (A new one would wait behind it.)"""
        return self._pending > 0

    def submit(self, fn: Callable[[], Any], *, retry: bool = False) -> Job:
        job = Job(fn, retry)
        with self._lock:
            self._pending += 1
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=f"scalpel-{self.name}", daemon=True)
                self._thread.start()
        self._q.put(job)
        return job

    def call(self, fn: Callable[[], Any], wait_s: float, *, retry: bool = False) -> Job:
        """Submit ``fn`` and wait for it at most ``wait_s``; the job runs on either way."""
        job = self.submit(fn, retry=retry)
        job.wait(wait_s)
        return job

    def flush(self, timeout: float = 10.0) -> bool:
        """Wait until everything submitted so far has run (tests, shutdown)."""
        return self.submit(lambda: None).wait(timeout)

    def close(self, timeout: float = 5.0) -> None:
        self.flush(timeout)
        self._stop.set()
        self._q.put(None)

    def _run(self) -> None:
        while True:
            job = self._q.get()
            if job is None:
                return
            delay = RETRY_FIRST_S
            while True:
                job.attempts += 1
                try:
                    job.result = job.fn()
                    job.error = None
                    break
                except RETRYABLE as e:
                    job.error = e
                    if not job.retry or self._stop.is_set():
                        break
                    self.retried += 1
                    log.debug("%s: write not done (%s); retrying in %.2f s", self.name, e, delay)
                    self._stop.wait(delay)
                    delay = min(RETRY_MAX_S, delay * 2)
                except Exception as e:  # noqa: BLE001 - a failed write never reaches the request
                    job.error = e
                    log.exception("%s: write failed", self.name)
                    break
            with self._lock:
                self._pending -= 1
            job._done.set()
