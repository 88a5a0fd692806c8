"""Give the memory of large requests back to the system once they are done.

A burst of concurrent multi-MB bodies (each read, parsed, analysed) peaks at
hundreds of MB. Python frees those objects at once, but glibc's malloc keeps
the freed pages in its arenas (one per thread that allocated: the pipeline
runs on a thread pool), so the resident size stays at the peak. After
requests totalling at least ``min_bytes`` have finished and none has been in
flight for ``idle_s``, ``malloc_trim(0)`` returns the free pages (run on a
worker thread: it walks every arena). The number of arenas is capped as
well (``M_ARENA_MAX``), so freed memory is not scattered over one arena per
thread. Elsewhere than glibc both are no-ops.

Steady traffic is never idle that long (Claude Code's next request follows
the answer at once while tools run fast), and between trims glibc keeps
what the requests freed: ten 2.6 MB conversations back to back sat near
120 MB with ~45 MB of it free inside the heap (``benchmarks/proxy_memory.py``).
So a trim also follows every ``busy_bytes`` (8 MB: about three such requests)
of finished requests, busy or not; it is cheap (a fraction of a millisecond
in-process) and runs off the request path (it releases the GIL; each arena is
locked only while it is walked). 64 MB left ~12 MB of free pages resident
at any moment once a dropped conversation's request was no longer parsed in
full (``surgery/ghost_turn.py``): 127-134 MB steady against 108-111 with 8 MB,
the median request 21 ms either way (``benchmarks/RESULTS-proxy-memory.md``).
Fixing the mmap threshold instead (so large blocks are unmapped when freed) gave memory back as well, but made every
multi-MB body page-fault afresh: 2-3x slower warm requests in
``benchmarks/pipeline.py``.

Most of those free heap pages are orjson's: a full parse of a body of n
bytes asks for one block of about 12 n bytes (its yyjson document pool),
freed when the parse returns (31 MB for a 2.6 MB body), and once glibc's
dynamic mmap threshold has risen to that size such pools are carved out of
the heap, leaving holes of touched pages (a 155 MB heap with 139 MB free
after 100 such requests, ``SCALPEL_MEMTRACE_FRAMES=0``). Pinning the
threshold at 8 MB kept them out of the heap (35 MB, 19 MB free), but the
trims already give those pages back, so over 1,000 requests the resident
size did not move, while every full parse faulted its pool in afresh (a few
ms each): not kept (``benchmarks/RESULTS-proxy-memory.md``)."""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import logging
import sys
import threading
from typing import Any

log = logging.getLogger("scalpel.proxy")

M_ARENA_MAX = -8
ARENAS = 2


def _libc() -> Any:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.malloc_trim  # noqa: B018 - glibc only
        libc.mallopt  # noqa: B018
        return libc
    except (OSError, AttributeError):
        return None


_LIBC = _libc()


def limit_arenas(n: int = ARENAS) -> bool:
    """Cap glibc's malloc arenas at ``n`` (for threads that allocate from now on)."""
    return bool(_LIBC is not None and _LIBC.mallopt(M_ARENA_MAX, n))


def trim() -> bool:
    """``malloc_trim(0)``: True when glibc gave memory back."""
    return bool(_LIBC is not None and _LIBC.malloc_trim(0))


class Trimmer:
    """Counts requests in flight and their bytes; trims once a large enough batch went idle,
    and after every ``busy_bytes`` of finished requests even when it never goes idle."""

    def __init__(self, *, idle_s: float = 0.5, min_bytes: int = 16 * 1024 * 1024,
                 busy_bytes: int = 8 * 1024 * 1024):
        self.idle_s = idle_s
        self.min_bytes = min_bytes
        self.busy_bytes = busy_bytes
        self.in_flight = 0
        self.trims = 0
        self._since = 0  # bytes of requests finished since the last trim (the busy rule)
        # ... since the last idle trim: a busy trim in the middle of a burst gives back little (the
        # burst's documents are alive), so it never stands in for the one once all is done
        self._idle_due = 0
        self._trimming = False  # a trim is queued or running: never two at once
        self._lock = threading.Lock()
        self._timer: asyncio.TimerHandle | None = None

    def started(self) -> None:
        with self._lock:
            self.in_flight += 1

    def finished(self, nbytes: int) -> None:
        """On the event loop, when a request's handler is done."""
        with self._lock:
            self.in_flight -= 1
            self._since += max(0, nbytes)
            self._idle_due += max(0, nbytes)
            busy = self._since >= self.busy_bytes and not self._trimming and _LIBC is not None
            if busy:
                self._since = 0
                self._trimming = True
            due = self.in_flight == 0 and self._idle_due >= self.min_bytes
        if busy:
            asyncio.get_running_loop().run_in_executor(None, self._trim)
        if due and _LIBC is not None:
            self._arm(asyncio.get_running_loop())

    def _arm(self, loop: asyncio.AbstractEventLoop) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer = loop.call_later(self.idle_s, self._maybe_trim, loop)

    def _maybe_trim(self, loop: asyncio.AbstractEventLoop) -> None:
        self._timer = None
        with self._lock:
            if self.in_flight or self._idle_due < self.min_bytes:
                return
            if self._trimming:  # a busy trim is running: this one comes after it
                again = True
            else:
                again = False
                self._since = self._idle_due = 0
                self._trimming = True
        if again:
            self._arm(loop)
            return
        loop.run_in_executor(None, self._trim)

    def _trim(self) -> None:
        try:
            trim()
            self.trims += 1
        except Exception:  # noqa: BLE001 - giving memory back is never worth an error
            log.debug("malloc_trim failed", exc_info=True)
        finally:
            with self._lock:
                self._trimming = False
