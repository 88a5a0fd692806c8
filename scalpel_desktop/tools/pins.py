"""Session pins: the removal set is fixed when a session starts.

Tools sit at the very start of the cached prefix: changing them mid-session
re-writes the whole cache. So the first request of a session pins the removal
list as it is then (empty when the filter is off), and every later request of
that session uses the same set, also after a config change or a proxy restart
(pins live in the database). A session first seen mid-conversation (its history
already holds an assistant turn: it started before this proxy saw it) is pinned
empty: filtering it now would re-write a cache it already has.
"""

from __future__ import annotations

import threading
from typing import Callable

from scalpel_desktop.tools.store import Pin, ToolStore


class SessionPins:
    def __init__(self, store: ToolStore, enabled: Callable[[], bool]):
        self.store = store
        self.enabled = enabled
        self._cache: dict[str, Pin] = {}
        self._lock = threading.Lock()

    def pin_for(self, session: str, *, mid_session: bool = False, now: float | None = None) -> Pin:
        with self._lock:
            pin = self._cache.get(session)
        if pin is not None:
            return pin
        pin = self.store.get_pin(session)
        if pin is None:
            on = _safe(self.enabled) and not mid_session
            names = self.store.removals().keys() if on else ()
            pin = self.store.create_pin(session, on, names, now=now)
        with self._lock:
            if len(self._cache) > 50000:
                self._cache.clear()
            self._cache[session] = pin
        return pin

    def forget(self) -> None:
        """Drop the in-memory copies (after the user re-pinned sessions on purpose)."""
        with self._lock:
            self._cache.clear()


def _safe(fn: Callable[[], bool]) -> bool:
    try:
        return bool(fn())
    except Exception:  # noqa: BLE001
        return False
