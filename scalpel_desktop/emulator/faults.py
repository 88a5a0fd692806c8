"""Faults on demand: what the next request(s) get instead of a normal answer.

Kinds (aliases in brackets):

* ``429`` (rate_limit): HTTP 429 ``rate_limit_error`` with ``retry-after``.
* ``529`` (overloaded): HTTP 529 ``overloaded_error``.
* ``500`` (api_error): HTTP 500 ``api_error``.
* ``status``: any ``status`` / ``error_type`` / ``message``.
* ``error_event`` (mid_stream_error): a stream that starts normally and, after
  ``after_events`` events, sends an ``error`` event (``error_type``, default
  ``overloaded_error``) and ends. A non-streaming request gets a 529 instead.
* ``drop`` (disconnect): the connection is closed after ``after_events``
  events (0: before any response byte).
* ``slow``: every event waits ``delay`` seconds; ``silences`` is a list of
  ``[after_event, seconds]`` pauses (no bytes at all, not even pings); a
  pause at the number of events comes after the last one, before the end.

* ``evict``: the provider drops every cache entry just before the request is
  billed (an eviction nothing in the bytes or the clock explains: a cache
  miss scalpel must call ``unexplained``); the request is answered normally.
  Only Messages requests take it (``count_tokens`` bills no cache).

A fault applies to the next ``count`` API requests (``count=-1``: until
cleared) whose path contains ``path`` (default: every API path).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

ALIASES = {
    "rate_limit": "429", "overloaded": "529", "api_error": "500", "server_error": "500",
    "mid_stream_error": "error_event", "disconnect": "drop", "dropped": "drop",
}
KINDS = ("429", "529", "500", "status", "error_event", "drop", "slow", "evict")
STATUS_OF = {"429": (429, "rate_limit_error", "Number of request tokens has exceeded your rate limit."),
             "529": (529, "overloaded_error", "Overloaded"),
             "500": (500, "api_error", "Internal server error")}


@dataclass
class Fault:
    kind: str
    count: int = 1
    path: str | None = None
    after_events: int = 2
    delay: float = 0.0
    silences: list[tuple[int, float]] = field(default_factory=list)
    status: int = 500
    error_type: str | None = None
    message: str | None = None
    retry_after: float = 0.0

    @classmethod
    def make(cls, kind: str | int, count: int = 1, **opts: Any) -> "Fault":
        k = ALIASES.get(str(kind), str(kind))
        if k not in KINDS:
            raise ValueError(f"unknown fault kind {kind!r}; known: {', '.join(KINDS + tuple(ALIASES))}")
        known = set(cls.__dataclass_fields__) - {"kind", "count"}
        unknown = set(opts) - known
        if unknown:
            raise ValueError(f"unknown fault option(s) {sorted(unknown)}; known: {sorted(known)}")
        if "silences" in opts:
            opts["silences"] = [(int(a), float(s)) for a, s in opts["silences"]]
        return cls(k, int(count), **opts)

    def error(self) -> tuple[int, str, str]:
        """(status, error type, message) for the status kinds."""
        if self.kind in STATUS_OF:
            status, etype, msg = STATUS_OF[self.kind]
            return status, self.error_type or etype, self.message or msg
        if self.kind == "error_event":  # non-streaming request
            return 529, self.error_type or "overloaded_error", self.message or "Overloaded"
        return self.status, self.error_type or "api_error", self.message or "Internal server error"

    def as_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


class FaultQueue:
    """Thread-safe: tests add faults from their thread, the server takes them."""

    def __init__(self) -> None:
        self._faults: list[Fault] = []
        self._lock = threading.Lock()

    def add(self, fault: Fault) -> Fault:
        with self._lock:
            self._faults.append(fault)
        return fault

    def clear(self) -> None:
        with self._lock:
            self._faults.clear()

    def take(self, path: str, skip: tuple[str, ...] = ()) -> Fault | None:
        """The fault the next request on ``path`` gets (one of ``skip``'s kinds is left for another)."""
        with self._lock:
            for f in self._faults:
                if f.kind in skip:
                    continue
                if f.path is None or f.path in path:
                    if f.count > 0:
                        f.count -= 1
                        if f.count == 0:
                            self._faults.remove(f)
                    return f
        return None
