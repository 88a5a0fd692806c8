"""Session pins: the removal set is fixed when a session starts.

Tools sit at the very start of the cached prefix: changing them mid-session
re-writes the whole cache. So the first request of a session pins the removal
list as it is then (empty when the filter is off), and every later request of
that session uses the same set, also after a config change or a proxy restart
(pins live in the database). A session first seen mid-conversation (its history
already holds an assistant turn: it started before this proxy saw it) is pinned
empty: filtering it now would re-write a cache it already has.

Nothing here makes a request wait on the database for long: a session's pin
is looked up and stored by a worker (``store/offpath.py``) that the request
waits on for ``wait_s`` at most. When the bound passes, ``pin_for`` answers
None (the request goes out unfiltered) and the worker carries on, retrying
until the database takes the write. A pin stored after its session's first
request went out unfiltered is stored EMPTY, so the session keeps the tools it
started with; once stored it is what every later request uses.

Most sessions are pinned empty (the filter is off, or the session was first
seen mid-conversation), and for those the answer does not depend on the
database: the set of sessions whose stored pin is NOT empty is read once, off
the request path (and again after ``forget``). A session outside that set
whose new pin would be empty gets its empty pin at once, without waiting; the
worker stores it (empty, whatever the filter says by then). Until the set has
been read, every session waits as above.
"""

from __future__ import annotations

import threading
import time
from typing import Callable

from scalpel_desktop.store.offpath import Job, Worker
from scalpel_desktop.tools.store import Pin, ToolStore


class _Attempt:
    """A session's pin on its way to the database."""

    __slots__ = ("job", "late", "created")

    def __init__(self) -> None:
        self.job: Job | None = None
        self.late = False  # a request went out unfiltered before the pin was stored: pin it empty
        self.created = False  # this attempt stored the session's pin


class SessionPins:
    def __init__(self, store: ToolStore, enabled: Callable[[], bool], *, worker: Worker | None = None,
                 wait_s: Callable[[], float] | None = None):
        """``wait_s``: how long a request may wait for its session's pin (None: until it is stored)."""
        self.store = store
        self.enabled = enabled
        self.worker = worker or Worker("pins")
        self.wait_s = wait_s
        self._cache: dict[str, Pin] = {}
        self._attempts: dict[str, _Attempt] = {}
        self._lock = threading.Lock()
        # Sessions whose stored pin is not empty (None: not read yet); read by the worker.
        self._nonempty: set[str] | None = None
        self._load_nonempty()

    def _load_nonempty(self) -> None:
        def load() -> None:
            got = set(self.store.nonempty_pins())
            with self._lock:
                self._nonempty = got
        self.worker.submit(load, retry=True)

    def pin_for(self, session: str, *, mid_session: bool = False, now: float | None = None) -> Pin | None:
        """The session's pin; None when it could not be read or stored within the bound
        (the caller sends the request unfiltered)."""
        with self._lock:
            pin = self._cache.get(session)
            if pin is not None:
                return pin
            attempt = self._attempts.get(session)
            if attempt is None:
                pin = self._start(session, mid_session, now)
                if pin is not None:
                    return pin
                attempt = self._attempts[session]
        job = attempt.job
        assert job is not None
        if attempt.late and not job.done:
            return None  # an earlier request of this session gave up waiting already: so does this one
        bound = _safe_float(self.wait_s) if self.wait_s is not None else None
        if not job.wait(bound):
            with self._lock:
                pin = self._cache.get(session)
                if pin is not None:
                    return pin  # stored just now
                attempt.late = True  # read by the job: the session's pin must be empty now
            return None
        if job.error is not None:  # not a busy or slow disk (those are retried): the caller fails open
            with self._lock:
                if self._attempts.get(session) is attempt:
                    del self._attempts[session]
            raise job.error
        return self._cache.get(session)

    def empty_at_once(self, session: str, now: float | None = None) -> bool:
        """Is this session's pin surely empty, known without waiting (a first sighting that goes
        out before the filter looks: ``pipeline/lane.py``)? With the filter off, a session seen for
        the first time gets its empty pin now, as ``pin_for`` would give it. With the filter on, a
        new session's pin depends on whether it is mid-conversation, which only the parsed body
        says: False."""
        with self._lock:
            pin = self._cache.get(session)
            if pin is not None:
                return not pin.names
            if session in self._attempts:
                return False
            return self._start(session, False, now, only_if_empty=True) is not None

    def _start(self, session: str, mid_session: bool, now: float | None, only_if_empty: bool = False) -> Pin | None:
        """(Under the lock.) The session's pin on its way to the database; the pin itself when it is
        surely empty: nothing stored (or an empty pin), and a new pin would be empty whatever the
        filter says (a session first seen mid-conversation) or because the filter is off."""
        surely_empty = self._nonempty is not None and session not in self._nonempty \
            and (mid_session or not _safe(self.enabled))
        if only_if_empty and not surely_empty:
            return None
        attempt = self._attempts[session] = _Attempt()
        pin = None
        if surely_empty:
            # Answered now; stored empty by the worker whatever happens meanwhile.
            attempt.late = True
            pin = self._cache[session] = Pin(session, now if now is not None else time.time(), False, frozenset())
        attempt.job = self.worker.submit(lambda: self._establish(session, mid_session, now, attempt), retry=True)
        return pin

    def _establish(self, session: str, mid_session: bool, now: float | None, attempt: _Attempt) -> Pin:
        """On the worker: the stored pin, or a new one - empty when a request of its session
        went out unfiltered before it was stored (retried by the worker until it is)."""
        pin = self.store.get_pin(session)
        if pin is None:
            with self._lock:
                late = attempt.late
            on = not late and _safe(self.enabled) and not mid_session
            names = self.store.removals().keys() if on else ()
            pin = self.store.create_pin(session, on, names, now=now)
            attempt.created = True
        with self._lock:
            stale = attempt.late and attempt.created and bool(pin.names)
            if not stale:
                return self._settle(session, pin)
        # The pin landed after a request of its new session had gone out unfiltered: empty it,
        # so the session keeps the tools it started with (no request used the stored set yet).
        pin = self.store.clear_pin(session)
        with self._lock:
            return self._settle(session, pin)

    def _settle(self, session: str, pin: Pin) -> Pin:
        if len(self._cache) > 50000:
            self._cache.clear()
        self._cache[session] = pin
        if pin.names and self._nonempty is not None:
            self._nonempty.add(session)
        self._attempts.pop(session, None)
        return pin

    def forget(self) -> None:
        """Drop the in-memory copies (after the user re-pinned sessions on purpose)."""
        with self._lock:
            self._cache.clear()
            self._nonempty = None  # a re-pin may have filled sessions' pins: read the set again
        self._load_nonempty()

    def close(self, timeout: float = 5.0) -> None:
        self.worker.close(timeout)


def _safe(fn: Callable[[], bool]) -> bool:
    try:
        return bool(fn())
    except Exception:  # noqa: BLE001
        return False


def _safe_float(fn: Callable[[], float]) -> float:
    try:
        return max(0.0, float(fn()))
    except Exception:  # noqa: BLE001 - a bad setting: the default bound
        return 0.05
