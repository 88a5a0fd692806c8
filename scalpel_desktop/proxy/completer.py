"""Where completions run: a small pool, one conversation's completions in order, requests first.

Why: every completion (the ledger row, a first sighting's analysis) used to
share one first-in-first-out thread, so a small conversation's completion
waited behind other conversations' 3 MB analyses, and its next request waited
for that completion (issue 25: 2.6 s behind 10 of them).

``KeyedPool`` runs completions on ``workers`` threads (the runtime sizes it
to the cores, two at least). Each conversation (the key ``Chain.answered``
gives, ``ex.pending_completion``) has a queue of its own: its completions
run one after the other in the order they were submitted, never two at once;
different conversations run side by side, and a completion without a key
runs as soon as a thread is free. A conversation's next completion goes to
the back of the pool's queue when the one before it ends, so one busy
conversation does not keep a thread from the others.

``RequestsFirst``: with one interpreter lock, a completion running while a
request is on its way slows that request (200 concurrent first sightings of
100 KB: p99 1.5 s through the proxy against 0.2 s for a bare forward, the
completions of the first ones competing with the later ones). So a
completion starts only once no request is on its request path (read, the
pipeline, the send upstream: ``entered``..``sent``) and no request has
streamed a byte for ``QUIET_S`` (an answer streaming from a slow model
leaves most of the time idle), or after ``MAX_DEFER_S`` whatever happens:
work after the answer yields to requests, never for long. Started, it runs
to its end (only its start is held).

``pending()`` is what the stop waits for (``runtime_stop.drain``): every
completion submitted and not done yet.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from typing import Any, Callable, Hashable

log = logging.getLogger("scalpel.proxy")

QUIET_S = 0.005  # no request streamed a byte for this long: what streams now waits on its upstream
MAX_DEFER_S = 0.5  # a completion waits for the requests this long at most


class RequestsFirst:
    """Counts the requests on their way; ``wait_turn`` holds a completion's start while they need the CPU."""

    def __init__(self, quiet_s: float = QUIET_S, max_defer_s: float = MAX_DEFER_S):
        self.quiet_s, self.max_defer_s = quiet_s, max_defer_s
        self._cv = threading.Condition(threading.Lock())
        self._open = 0  # requests the proxy handles now (entered, not finished)
        self._sending = 0  # ... of them on their request path (entered, not sent upstream yet)
        self._last = time.monotonic()  # the latest sign of life of any request
        self._aside = 0  # ... of those on their path, the ones waiting for their conversation's completion
        self.deferred = 0  # completions that waited (for the tests and the benchmark)

    def entered(self) -> "Ticket":
        """A request arrived: it is on its request path until ``Ticket.sent``, open until ``Ticket.finished``."""
        with self._cv:
            self._open += 1
            self._sending += 1
            self._last = time.monotonic()
        return Ticket(self)

    @contextmanager
    def aside(self) -> Iterator[None]:
        """A request on its path waits for its own conversation's completion (``Chain``'s order): it
        needs no CPU meanwhile, and the completion it waits for must not wait for it."""
        with self._cv:
            self._aside += 1
            self._cv.notify_all()
        try:
            yield
        finally:
            with self._cv:
                self._aside -= 1
                self._last = time.monotonic()

    def touch(self) -> None:
        """A request streamed a chunk (no lock: one float)."""
        self._last = time.monotonic()

    def _left(self, sending: bool, open_: bool) -> None:
        with self._cv:
            if sending:
                self._sending = max(0, self._sending - 1)
            if open_:
                self._open = max(0, self._open - 1)
            self._last = time.monotonic()
            self._cv.notify_all()

    def _clear(self, now: float) -> float:
        """0 when a completion may start now; else how long to wait before looking again."""
        if self._sending > self._aside:
            return self.quiet_s
        if not self._open:
            return 0.0
        idle = now - self._last
        return 0.0 if idle >= self.quiet_s else self.quiet_s - idle

    def wait_turn(self) -> None:
        """Until a completion may start (see the module docstring)."""
        start = time.monotonic()
        deadline = start + self.max_defer_s
        waited = False
        with self._cv:
            while True:
                now = time.monotonic()
                left = self._clear(now)
                if left <= 0 or now >= deadline:
                    break
                waited = True
                self._cv.wait(min(left, deadline - now))
        if waited:
            self.deferred += 1


class Ticket:
    """One request's place in ``RequestsFirst``: ``sent`` once it left upstream, ``finished`` once over."""

    __slots__ = ("_gate", "_sending", "_open")

    def __init__(self, gate: RequestsFirst):
        self._gate, self._sending, self._open = gate, True, True

    def sent(self) -> None:
        if self._sending:
            self._sending = False
            self._gate._left(True, False)

    def finished(self) -> None:
        if self._open:
            sending, self._sending, self._open = self._sending, False, False
            self._gate._left(sending, True)


class KeyedPool(Executor):
    """A thread pool whose tasks of one key run in submission order, one at a time (module docstring)."""

    def __init__(self, workers: int, name: str = "scalpel-complete", gate: RequestsFirst | None = None):
        self._pool = ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix=name)
        self.workers = max(1, workers)
        self.gate = gate
        self._lock = threading.Lock()
        self._queues: dict[Hashable, deque] = {}  # key -> tasks waiting behind the one running
        self._pending: set[Future] = set()  # submitted, not done
        self._shut = False

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:
        """A task of no conversation: as soon as a thread is free."""
        return self.submit_in(None, fn, *args, **kwargs)

    def submit_in(self, key: Hashable | None, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:
        """``fn(*args)`` after every task of ``key`` submitted before it (None: no order)."""
        fut: Future = Future()
        task = (fut, fn, args, kwargs)
        with self._lock:
            if self._shut:
                raise RuntimeError("cannot schedule new futures after shutdown")
            self._pending.add(fut)
            if key is not None:
                queue = self._queues.get(key)
                if queue is not None:  # one of this key runs or waits: behind it
                    queue.append(task)
                    return fut
                self._queues[key] = deque()
        self._start(key, task)
        return fut

    def pending(self) -> list[Future]:
        """Every task submitted and not done yet."""
        with self._lock:
            return list(self._pending)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._lock:
            self._shut = True
            queued = [t for q in self._queues.values() for t in q] if cancel_futures else []
            if cancel_futures:
                for q in self._queues.values():
                    q.clear()
        for fut, *_ in queued:
            self._drop(fut)
        self._pool.shutdown(wait=wait, cancel_futures=cancel_futures)
        if cancel_futures:
            for fut in self.pending():
                if not fut.running():
                    self._drop(fut)

    def _start(self, key: Hashable | None, task: tuple) -> None:
        try:
            inner = self._pool.submit(self._run, key, task)
        except RuntimeError:  # shut down meanwhile: dropped (the stop records its row)
            self._drop(task[0])
            self._next(key)
            return
        # A task the inner pool cancels at shutdown never runs: neither must what waits behind it.
        inner.add_done_callback(lambda f: self._cancelled(key, task) if f.cancelled() else None)

    def _run(self, key: Hashable | None, task: tuple) -> None:
        fut, fn, args, kwargs = task
        try:
            if fut.set_running_or_notify_cancel():
                if self.gate is not None:
                    self.gate.wait_turn()
                try:
                    result = fn(*args, **kwargs)
                except BaseException as e:  # noqa: BLE001 - the caller's future carries it
                    fut.set_exception(e)
                else:
                    fut.set_result(result)
        finally:
            with self._lock:
                self._pending.discard(fut)
            self._next(key)

    def _next(self, key: Hashable | None) -> None:
        if key is None:
            return
        with self._lock:
            queue = self._queues.get(key)
            if not queue:
                self._queues.pop(key, None)
                return
            task = queue.popleft()
        self._start(key, task)

    def _cancelled(self, key: Hashable | None, task: tuple) -> None:
        self._drop(task[0])
        self._next(key)

    def _drop(self, fut: Future) -> None:
        fut.cancel()
        with self._lock:
            self._pending.discard(fut)
