"""How a stopping runtime keeps every ledger row and still ends within its bound.

Why: a stop used to wait for every queued completion, analyses included (30
first sightings of 3 MB: 11 s), before the ledger closed, so a service
manager's SIGKILL (systemd's ``TimeoutStopSec``) took the rows with it; a
stage closing against a locked database could hold the exit as long.

``Runtime._teardown`` goes, within the stop's deadline (``STOP_TIMEOUT_S``):

1. ``keep_rows``: the pipeline hurries (``Chain.hurry``: a completion not
   started yet keeps its row and drops its analysis), the completions and
   observations already queued run until ``ROWS_RESERVE_S`` before the
   deadline, or a second Ctrl-C / SIGTERM (``hurry``); then every answered
   request whose row is still not recorded (its completion queued behind an
   analysis still running) is recorded from here (``record_unfinished``);
2. the ledger writes the rows, or journals them, by the deadline
   (``LedgerWriter.close``);
3. ``close_in_time``: the stages close (their own writers flush) on a daemon
   thread, waited for until the deadline: one stuck on a lock does not hold
   the exit.
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import Executor
from typing import Any, Callable, Iterable

log = logging.getLogger("scalpel.runtime")

STOP_TIMEOUT_S = 5.0  # Runtime.stop's bound; the service units allow far more (service/templates.py)
ROWS_RESERVE_S = 1.5  # of a stop's time, kept for the ledger and the stages after the completions


def keep_rows(chain: Any, pools: Iterable[Executor | None], deadline: float, hurry: threading.Event) -> int:
    """Steps 1 of the stop (see above); the pools are shut down. How many rows were recorded from here."""
    if chain is not None:
        chain.hurry()
    by = deadline - ROWS_RESERVE_S
    pools = [p for p in pools if p is not None]
    for pool in pools:
        drain(pool, by, hurry)
    n = chain.record_unfinished() if chain is not None else 0
    for pool in pools:
        pool.shutdown(wait=False, cancel_futures=True)  # what is left has its row: nothing more to wait for
    if n:
        log.info("stopping: %d row(s) recorded without their analysis", n)
    return n


def drain(pool: Executor, by: float, hurry: threading.Event | None = None) -> bool:
    """Wait until what ``pool`` holds now has run, until ``by`` (monotonic) or ``hurry``; True when
    it has. A keyed pool (``proxy/completer.py``) says what it holds (``pending``); a pool of one
    thread, first in first out, has run it all once a marker submitted now has run."""
    if hasattr(pool, "pending"):
        todo = pool.pending()
    else:
        try:
            todo = [pool.submit(lambda: None)]
        except RuntimeError:  # shut down already
            return True
    for fut in todo:
        while not fut.done():
            left = by - time.monotonic()
            if left <= 0 or (hurry is not None and hurry.is_set()):
                return False
            try:
                fut.result(timeout=min(0.05, left))
            except Exception:  # noqa: BLE001 - (a timeout, or the task's own error: look again)
                pass
    return True


def close_in_time(close: Callable[..., Any], *args: Any, deadline: float, what: str = "the stages") -> bool:
    """Run ``close(*args)`` on a daemon thread and wait for it until ``deadline`` (monotonic); True when it ended."""
    thread = threading.Thread(target=close, args=args, name="scalpel-close", daemon=True)
    thread.start()
    thread.join(max(0.0, deadline - time.monotonic()))
    if thread.is_alive():
        log.warning("stopping: closing %s did not end by the stop's deadline; left to the exit", what)
        return False
    return True
