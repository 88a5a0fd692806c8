"""What the surgery stage remembers of a conversation's previous request.

Claude Code re-sends the whole history on every request, and everything but
the last message is the same bytes as last time. Hashing 2.9 MB again, and
re-analysing it, on every request would cost more than the 10 ms the whole
pipeline may add. So per conversation we keep the previous request's raw
bytes, where each message sits in them, the per-message hashes, and the body
we sent for it (with its stubs). A new request whose bytes up to the end of
the previous request's second-to-last message are identical (one ``==`` on
two slices) reuses all of that; only the new messages are located and hashed.

Unit hashes here are the economist's: sha256 (16 bytes) of a message's
compact JSON with cache markers removed and a string ``content`` treated as
the one text block it stands for (the last message flips between the two as
its marker moves). Every message located is checked against the raw bytes
(``dumps(message)`` must be exactly what sits there), so a body that does not
round-trip, or a wrong offset, is never reused: ``locate`` returns None.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Hashable

from scalpel_desktop.wire.jsoncodec import dumps

_MESSAGES = b'"messages":['
COMMA, CLOSE = ord(","), ord("]")


def _strip_markers(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _strip_markers(v) for k, v in obj.items() if k != "cache_control"}
    if isinstance(obj, list):
        return [_strip_markers(v) for v in obj]
    return obj


def unit_hash(message: Any, data: bytes | None = None) -> bytes:
    """The economist's hash of one message (``data``: its compact bytes, when known)."""
    if isinstance(message, dict) and isinstance(message.get("content"), str):
        message = {k: ([{"type": "text", "text": v}] if k == "content" else v) for k, v in message.items()}
        data = None
    if data is None:
        data = dumps(message)
    if b'"cache_control"' in data:
        data = dumps(_strip_markers(message))
    return hashlib.sha256(data).digest()[:16]


def region_hash(obj: Any) -> str:
    """Hash of a cache-breaking region (system, tools, settings), markers excluded."""
    data = dumps(obj)
    if b'"cache_control"' in data:
        data = dumps(_strip_markers(obj))
    return hashlib.sha256(data).hexdigest()


@dataclass
class Layout:
    """Where each message of a raw body sits, and its hash and size."""

    ends: list[int]  # byte offset just past each message
    sizes: list[int]  # compact bytes of each message
    hashes: list[bytes]  # economist hashes of the ORIGINAL messages
    reused: int = 0  # messages taken over from the previous request


@dataclass
class Snapshot:
    """The previous request of a conversation, as received and as sent."""

    raw: bytes
    layout: Layout
    sent: bytes | None  # None: the original bytes were sent
    shift: list[int]  # sent offset of ends[i] = ends[i] + shift[i]
    sent_hashes: list[bytes]
    stubs: list[tuple[str, int, int, int]] = field(default_factory=list)  # (id, sent offset, tokens saved, unit)
    _head: bytes | None = field(default=None, repr=False)
    # The conversation view of the last request analysed in full (its rewrite
    # validated and sent): the next full analysis shares its per-result work
    # (``view_for(..., previous=view)``) and its validated rewritten messages.
    view: Any = field(default=None, repr=False)

    def nbytes(self) -> int:
        """Body bytes this snapshot keeps alive (received and, when different, sent)."""
        return len(self.raw) + (len(self.sent) if self.sent is not None and self.sent is not self.raw else 0)

    def head(self) -> bytes:
        """``raw`` up to the end of its second-to-last message: what the next request repeats."""
        if self._head is None:
            ends = self.layout.ends
            self._head = self.raw[: ends[-2]] if len(ends) >= 2 else b""
        return self._head


def repeats(raw: bytes, prev: Snapshot, k: int) -> bool:
    """Does ``raw`` repeat ``prev``'s bytes through its message ``k - 1``? (memcmp, no copy
    in the common case ``k == len(prev.layout.ends) - 1``)."""
    end = prev.layout.ends[k - 1]
    if len(raw) <= end:
        return False
    if k == len(prev.layout.ends) - 1:
        return raw.startswith(prev.head())
    return raw[:end] == prev.raw[:end]


def locate(raw: bytes, doc: Any, prev: Snapshot | None) -> Layout | None:
    """The layout of ``raw`` (parsed as ``doc``), reusing ``prev`` where the bytes match."""
    msgs = doc.get("messages") if isinstance(doc, dict) else None
    if not isinstance(msgs, list) or not msgs:
        return None
    n = len(msgs)
    ends: list[int] = []
    sizes: list[int] = []
    hashes: list[bytes] = []
    k = 0
    if prev is not None:
        k = min(len(prev.layout.ends) - 1, n - 1)
        if k > 0:
            if repeats(raw, prev, k):
                ends = prev.layout.ends[:k]
                sizes = prev.layout.sizes[:k]
                hashes = prev.layout.hashes[:k]
            else:
                k = 0
        else:
            k = 0
    if k:
        cursor = ends[-1] + 1
    else:
        at = raw.find(_MESSAGES)
        if at < 0:
            return None
        cursor = at + len(_MESSAGES)
    for i in range(k, n):
        data = dumps(msgs[i])
        stop = cursor + len(data)
        if raw[cursor:stop] != data or stop >= len(raw) or raw[stop] != (COMMA if i < n - 1 else CLOSE):
            return None
        ends.append(stop)
        sizes.append(len(data))
        hashes.append(unit_hash(msgs[i], data))
        cursor = stop + 1
    return Layout(list(ends), list(sizes), list(hashes), k)


# Retention budget of the memo, in body bytes (received + sent). The parsed
# messages and the view that come with a snapshot add about as much again.
MEMO_MAX_BYTES = 32 * 1024 * 1024


class Memo:
    """The most recently used conversations' snapshots, bounded by count AND by bytes.

    Each snapshot keeps up to two copies of a body (as received, as sent): a
    few long conversations would otherwise hold hundreds of MB. Least recently
    used first, snapshots are dropped until both bounds hold; a conversation
    whose snapshot was dropped is analysed in full on its next request
    (correct, only slower). A snapshot larger than the whole budget is not kept.
    """

    def __init__(self, size: int = 8, max_bytes: int = MEMO_MAX_BYTES):
        self.size = size
        self.max_bytes = max_bytes
        self._items: OrderedDict[Hashable, Snapshot] = OrderedDict()
        self._bytes = 0

    @property
    def nbytes(self) -> int:
        """Body bytes currently retained (what ``max_bytes`` bounds)."""
        return self._bytes

    def __len__(self) -> int:
        return len(self._items)

    def get(self, key: Hashable) -> Snapshot | None:
        snap = self._items.get(key)
        if snap is not None:
            self._items.move_to_end(key)
        return snap

    def put(self, key: Hashable, snap: Snapshot) -> None:
        self.drop(key)
        size = snap.nbytes()
        if size > self.max_bytes or self.size <= 0:
            return
        self._items[key] = snap
        self._bytes += size
        while len(self._items) > self.size or self._bytes > self.max_bytes:
            _, old = self._items.popitem(last=False)
            self._bytes -= old.nbytes()

    def drop(self, key: Hashable) -> None:
        old = self._items.pop(key, None)
        if old is not None:
            self._bytes -= old.nbytes()
