"""One background thread that runs the tools' database writes off the proxy's loop.

Stages hand it small callables; a full queue drops the write (an inventory row
is not worth slowing a request for) and counts the drop. ``flush`` waits until
everything queued so far has run (tests, shutdown); its own marker waits for
room rather than being dropped, so a full queue that drains in time still
flushes (it used to wait out its whole timeout and say it had not).
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from typing import Any, Callable

log = logging.getLogger("scalpel.tools")


class BackgroundWriter:
    def __init__(self, maxsize: int = 10000):
        self._q: queue.Queue = queue.Queue(maxsize=maxsize)
        self.dropped = 0
        self.failed = 0
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
        self.flush(timeout)
        self._q.put((None, ()))
        self._thread.join(timeout)

    def _run(self) -> None:
        while True:
            fn, args = self._q.get()
            if fn is None:
                return
            try:
                fn(*args)
            except Exception:  # noqa: BLE001 - a failed write never reaches the request
                self.failed += 1
                log.exception("tools: background write failed")
