"""The emulator's record of every request it received: the byte-identity judge.

Other tests compare what a client sent with what reached the upstream using
this record (raw body bytes, headers as received, path and query), never the
proxy's own logs.
"""

from __future__ import annotations

import base64
import hashlib
import threading
from dataclasses import dataclass, field
from typing import Any

from multidict import CIMultiDict, CIMultiDictProxy

from scalpel_desktop.wire.usage import Usage
from scalpel_desktop.wire.jsoncodec import loads


@dataclass
class RecordedRequest:
    index: int
    method: str
    path: str  # without the query string
    query: str  # raw query string ("" when none)
    headers: CIMultiDictProxy  # as received, case-insensitive lookups
    body: bytes
    time: float  # emulator clock
    api: str = "other"  # anthropic | openai | emulator | other
    endpoint: str = "other"  # messages | count_tokens | models | chat | responses | other
    status: int | None = None
    usage: Usage | None = None  # the bill, when the request was billed
    track: str | None = None  # script track and turn index answered
    turn: int | None = None
    answer: Any = None  # the content / message answered (JSON-able)
    fault: str | None = None
    error: str | None = None
    conversation: str | None = None  # wire.identity.conversation_key, for API requests

    @property
    def path_qs(self) -> str:
        return f"{self.path}?{self.query}" if self.query else self.path

    def json(self) -> Any:
        return loads(self.body)

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.body).hexdigest()

    def as_dict(self) -> dict:
        return {
            "index": self.index, "method": self.method, "path": self.path, "query": self.query,
            "headers": [[k, v] for k, v in self.headers.items()],
            "body_b64": base64.b64encode(self.body).decode(), "body_sha256": self.sha256,
            "body_bytes": len(self.body), "time": self.time, "api": self.api, "endpoint": self.endpoint,
            "status": self.status, "usage": self.usage.as_dict() if self.usage else None,
            "track": self.track, "turn": self.turn, "fault": self.fault, "error": self.error,
            "conversation": self.conversation,
        }

    @classmethod
    def from_dict(cls, d: dict) -> "RecordedRequest":
        """Rebuild a record from ``GET /_emulator/requests`` (another process)."""
        u = d.get("usage")
        return cls(
            index=d["index"], method=d["method"], path=d["path"], query=d["query"],
            headers=CIMultiDictProxy(CIMultiDict([tuple(p) for p in d["headers"]])),
            body=base64.b64decode(d["body_b64"]), time=d["time"], api=d["api"], endpoint=d["endpoint"],
            status=d["status"], usage=Usage(**u) if u else None, track=d.get("track"), turn=d.get("turn"),
            fault=d.get("fault"), error=d.get("error"), conversation=d.get("conversation"),
        )


@dataclass
class Recorder:
    items: list[RecordedRequest] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, **kw: Any) -> RecordedRequest:
        with self._lock:
            rec = RecordedRequest(index=len(self.items), **kw)
            self.items.append(rec)
        return rec

    def snapshot(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self.items)

    def clear(self) -> None:
        with self._lock:
            self.items.clear()
