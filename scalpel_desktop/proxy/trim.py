"""Give the memory of large requests back to the system once they are done.

A burst of concurrent multi-MB bodies (each read, parsed, analysed) peaks at
hundreds of MB. Python frees those objects at once, but glibc's malloc keeps
the freed pages in its arenas (one per thread that allocated: the pipeline
runs on a thread pool), so the resident size stays at the peak. After
requests totalling at least ``min_bytes`` have finished and none has been in
flight for ``idle_s``, ``malloc_trim(0)`` returns the free pages (run on a
worker thread: it walks every arena). The number of arenas is capped as
well (``M_ARENA_MAX``), so freed memory is not scattered over one arena per
thread. Elsewhere than glibc all three are no-ops.

And the mmap threshold is fixed at 128 KB (``M_MMAP_THRESHOLD``). glibc
starts there but raises the threshold to the size of every mmapped block
freed (up to 32 MB): after the first 2.6 MB body was freed, every later body,
its copies and its serialisations came from the heap, where freed blocks
between live ones stay resident. Steady traffic of ten 2.6 MB conversations
then sat near 120 MB with ~45 MB of it free inside the heap
(``benchmarks/proxy_memory.py``); fixed, a block of 128 KB or more is its own
mapping and goes back to the system when freed (about 80 MB).
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import logging
import sys
import threading
from typing import Any

log = logging.getLogger("scalpel.proxy")

M_MMAP_THRESHOLD = -3
M_ARENA_MAX = -8
ARENAS = 2
MMAP_THRESHOLD = 128 * 1024


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


def fix_mmap_threshold(n: int = MMAP_THRESHOLD) -> bool:
    """Blocks of ``n`` bytes or more are mmapped, always (no dynamic raise): freed, they are unmapped."""
    return bool(_LIBC is not None and _LIBC.mallopt(M_MMAP_THRESHOLD, n))


def trim() -> bool:
    """``malloc_trim(0)``: True when glibc gave memory back."""
    return bool(_LIBC is not None and _LIBC.malloc_trim(0))


class Trimmer:
    """Counts requests in flight and their bytes; trims once a large enough batch went idle."""

    def __init__(self, *, idle_s: float = 0.5, min_bytes: int = 16 * 1024 * 1024):
        self.idle_s = idle_s
        self.min_bytes = min_bytes
        self.in_flight = 0
        self.trims = 0
        self._since = 0  # bytes of requests finished since the last trim
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
            due = self.in_flight == 0 and self._since >= self.min_bytes
        if due and _LIBC is not None:
            loop = asyncio.get_running_loop()
            if self._timer is not None:
                self._timer.cancel()
            self._timer = loop.call_later(self.idle_s, self._maybe_trim, loop)

    def _maybe_trim(self, loop: asyncio.AbstractEventLoop) -> None:
        self._timer = None
        with self._lock:
            if self.in_flight or self._since < self.min_bytes:
                return
            self._since = 0
        loop.run_in_executor(None, self._trim)

    def _trim(self) -> None:
        try:
            trim()
            self.trims += 1
        except Exception:  # noqa: BLE001 - giving memory back is never worth an error
            log.debug("malloc_trim failed", exc_info=True)
