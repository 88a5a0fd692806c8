"""Surgery and the tool filter come on when the database can be used: at start, or later by themselves.

Why: both keep their state in the ledger database (the tool store, the surgery
log), and opening it can wait on another program's lock (a sqlite3 shell in
``BEGIN EXCLUSIVE``, a backup tool) or fail (a garbage file). The proxy's port
must never wait for that, nor stay without features for the whole process.

``first(build)`` runs ``build`` (``assemble.feature_stages``) on a thread of
its own and waits ``wait_s`` (1 s) at most: the stages when they were built in
time (the usual case: the runtime starts with them), else None, and the
runtime starts listening without them (fail open: requests are forwarded
unchanged). The thread goes on: a failed build is said to ``on_error(why)``
(the runtime's status: "surgery off") and retried after ``first_retry_s``,
doubling up to ``max_retry_s``, until it works or ``stop``; the stages built
late are handed to the sink given by ``deliver_to`` (``assemble.install_features``
into the running chain), once, and ``on_error(None)`` says they are on. Stages
built after ``stop`` are closed, never handed over.
"""

from __future__ import annotations

import logging
import threading
from typing import Callable

log = logging.getLogger("scalpel.pipeline")

WAIT_S = 1.0
FIRST_RETRY_S = 1.0
MAX_RETRY_S = 30.0


class LateFeatures:
    def __init__(self, *, wait_s: float = WAIT_S, first_retry_s: float = FIRST_RETRY_S,
                 max_retry_s: float = MAX_RETRY_S, on_error: Callable[[str | None], None] | None = None,
                 close: Callable[[list], None] | None = None):
        """``close(stages)``: what to do with stages nobody will use (built after ``stop``)."""
        self.wait_s = wait_s
        self.first_retry_s, self.max_retry_s = first_retry_s, max_retry_s
        self.attempts = 0
        self.built_late = False  # True once stages built after ``first`` gave up were handed over
        self._on_error = on_error
        self._close = close
        self._lock = threading.Lock()
        self._first_done = threading.Event()  # the first attempt ended (built or failed)
        self._wake = threading.Event()
        self._late = False  # ``first`` gave up waiting: what is built goes to the sink
        self._stopped = False
        self._held: list | None = None  # built, not handed over yet
        self._sink: Callable[[list], None] | None = None
        self._thread: threading.Thread | None = None

    def first(self, build: Callable[[], list]) -> list | None:
        """Build (on a thread) and wait ``wait_s`` at most: the stages, or None (they come later)."""
        self._thread = threading.Thread(target=self._run, args=(build,), name="scalpel-features", daemon=True)
        self._thread.start()
        self._first_done.wait(self.wait_s)
        with self._lock:
            held, self._held = self._held, None
            if held is None:
                self._late = True
            return held

    def deliver_to(self, sink: Callable[[list], None]) -> None:
        """Where stages built late go (called once the chain exists); stages already built go now."""
        with self._lock:
            self._sink = sink
            if self._late and self._held is not None and not self._stopped:
                held, self._held = self._held, None
                self._hand_over(held)

    def stop(self) -> None:
        """No stage is handed over from now on; the retries end."""
        with self._lock:
            self._stopped = True
            held, self._held = self._held, None
        self._wake.set()
        if held is not None:
            self._discard(held)

    @property
    def pending(self) -> bool:
        """Still trying (the features are not in yet)?"""
        return self._thread is not None and self._thread.is_alive()

    def _run(self, build: Callable[[], list]) -> None:
        delay = self.first_retry_s
        while True:
            self.attempts += 1
            try:
                stages = build()
            except Exception as e:  # noqa: BLE001 - sqlite3.Error, OSError; anything else is a bug, retried too
                self._failed(e, delay)
            else:
                self._built(stages)
                return
            self._first_done.set()
            if self._wake.wait(delay) or self._stopped:
                return
            delay = min(delay * 2, self.max_retry_s)

    def _built(self, stages: list) -> None:
        with self._lock:
            if self._stopped:
                discard = True
            elif not self._late:  # ``first`` still waits (or is about to look): it takes them
                self._held, discard = stages, False
            elif self._sink is not None:
                self._hand_over(stages)
                discard = False
            else:
                self._held, discard = stages, False
            self._first_done.set()
        if discard:
            self._discard(stages)

    def _hand_over(self, stages: list) -> None:
        """(Under the lock.) The sink gets them; a sink that fails leaves the features off, logged."""
        try:
            self._sink(stages)  # type: ignore[misc]
            self.built_late = True
            self._tell(None)
            log.warning("tool filter and surgery are on: the database can be used now (attempt %d)", self.attempts)
        except Exception:  # noqa: BLE001
            log.exception("putting the tool filter and surgery into the running pipeline failed")
            self._discard(stages)

    def _failed(self, e: BaseException, delay: float) -> None:
        why = f"{type(e).__name__}: {e}"
        if self.attempts == 1:
            log.warning("the database cannot be used (%s): tool filter and surgery are off, requests are "
                        "forwarded unchanged; tried again until it can be", why)
        else:
            log.info("the database still cannot be used (%s); next try in %.0f s", why, delay)
        if not isinstance(e, OSError) and type(e).__module__ != "sqlite3":
            log.exception("building the tool filter and surgery failed", exc_info=e)
        self._tell(why)

    def _tell(self, why: str | None) -> None:
        if self._on_error is not None:
            try:
                self._on_error(why)
            except Exception:  # noqa: BLE001
                log.exception("on_error failed")

    def _discard(self, stages: list) -> None:
        if self._close is not None:
            try:
                self._close(stages)
            except Exception:  # noqa: BLE001
                log.exception("closing unused feature stages failed")
