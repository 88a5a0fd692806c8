"""Where each message of a raw Messages body sits in its bytes.

Parse-reuse and the surgery stage both work from the raw bytes of a 2.9 MB
body without re-serializing it: a ``Layout`` says where each message ends,
how many compact bytes it has and its economist hash (``wire/hashing.py``).
``locate`` builds one, re-using a previous body's layout where the new bytes
repeat it (one slice comparison); every message it locates is checked against
the raw bytes (``dumps(message)`` must be exactly what sits there), so a body
that does not round-trip, or a wrong offset, is never trusted: ``locate``
returns None. ``round_trips_by_layout`` then proves a whole body round-trips
by serializing only what lies around the messages.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Protocol

from scalpel_desktop.wire.hashing import message_hash
from scalpel_desktop.wire.jsoncodec import dumps, loads

MESSAGES_KEY = b'"messages":['
COMMA, CLOSE = ord(","), ord("]")


@dataclass
class Layout:
    """Where each message of a raw body sits, and its hash and size."""

    ends: list[int]  # byte offset just past each message
    sizes: list[int]  # compact bytes of each message
    hashes: list[bytes]  # economist hashes of the ORIGINAL messages
    reused: int = 0  # messages taken over from the previous request


class LaidOut(Protocol):
    """A remembered raw body with its layout (``head``: the bytes through its second-to-last message)."""

    raw: bytes
    layout: Layout

    def head(self) -> bytes: ...


class LaidOutBody:
    """The plain ``LaidOut``: a raw body, its layout, the head cached."""

    __slots__ = ("raw", "layout", "_head")

    def __init__(self, raw: bytes, layout: Layout):
        self.raw = raw
        self.layout = layout
        self._head: bytes | None = None

    def head(self) -> bytes:
        if self._head is None:
            self._head = head_of(self.raw, self.layout)
        return self._head


def head_of(raw: bytes, layout: Layout) -> bytes:
    """``raw`` up to the end of its second-to-last message: what the next request repeats."""
    ends = layout.ends
    return raw[: ends[-2]] if len(ends) >= 2 else b""


def repeats(raw: bytes, prev: LaidOut, k: int) -> bool:
    """Does ``raw`` repeat ``prev``'s bytes through its message ``k - 1``? (one memcmp over a
    view of ``prev.raw``: no copy of a 2.9 MB prefix.)"""
    end = prev.layout.ends[k - 1]
    if len(raw) <= end:
        return False
    return raw.startswith(memoryview(prev.raw)[:end])


def locate(raw: bytes, doc: Any, prev: LaidOut | None) -> Layout | None:
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
        # all but the previous last message (always rewritten); else one fewer: a client before 2.1
        # moves its second message marker off the message before the last (bench/client_markers.py)
        k = next((j for j in (k, k - 1) if j > 0 and repeats(raw, prev, j)), 0)
        if k:
            ends = prev.layout.ends[:k]
            sizes = prev.layout.sizes[:k]
            hashes = prev.layout.hashes[:k]
    if k:
        cursor = ends[-1] + 1
    else:
        at = top_level_find(raw, MESSAGES_KEY)
        if at < 0:
            return None
        cursor = at + len(MESSAGES_KEY)
    ends, sizes, hashes = list(ends), list(sizes), list(hashes)
    if lay_out(raw, msgs, k, cursor, ends, sizes, hashes) is None:
        return None
    return Layout(ends, sizes, hashes, k)


def lay_out(raw: bytes, msgs: list, first: int, cursor: int, ends: list, sizes: list, hashes: list) -> int | None:
    """Lay out ``msgs[first:]`` from byte ``cursor`` of ``raw`` (each must serialize to exactly the
    bytes there, a comma after each but the last, the closing bracket after it), appending to
    ``ends``, ``sizes`` and ``hashes``; the offset just past that bracket, or None."""
    n = len(msgs)
    for i in range(first, n):
        data = dumps(msgs[i])
        stop = cursor + len(data)
        if raw[cursor:stop] != data or stop >= len(raw) or raw[stop] != (COMMA if i < n - 1 else CLOSE):
            return None
        ends.append(stop)
        sizes.append(len(data))
        hashes.append(message_hash(msgs[i], data))
        cursor = stop + 1
    return cursor


def split_at(raw: bytes, cut: int) -> tuple[int, dict, list, dict] | None:
    """``raw`` parsed around its first messages without parsing them: (where ``"messages":[``
    sits, the keys before it, the messages after byte ``cut`` - the comma that ends one of them -
    and the keys after them); None when that is not what the bytes hold."""
    start = raw.find(MESSAGES_KEY)
    if start < 0:
        return None
    try:
        head = raw[:start]
        head_doc = loads(head[:-1] + b"}") if head.endswith(b",") else loads(head + b"}")
        tail_doc = loads(_TAIL_OPEN + raw[cut + 1:])
    except ValueError:  # (the codec's JSONDecodeError is one)
        return None
    if not isinstance(head_doc, dict) or not isinstance(tail_doc, dict):
        return None
    msgs = tail_doc.pop(_TAIL_KEY, None)
    if not isinstance(msgs, list) or "messages" in head_doc or "messages" in tail_doc or _TAIL_KEY in head_doc:
        return None
    return start, head_doc, msgs, tail_doc


_TAIL_KEY = "\u0000scalpel-tail"
_TAIL_OPEN = b'{"\\u0000scalpel-tail":['


def top_level_find(raw: bytes, key: bytes) -> int:
    """Where ``key`` (``"name":[``) first sits as a key of the top-level object, or -1.

    A nested object before it may hold the same key (``{"metadata":{"messages":[...]},
    "messages":[...]}``): its offsets would be proven against the wrong list. Strings
    are blanked out (a key inside one is escaped anyway), then brackets counted. What
    precedes the messages is short in practice (Claude Code sends ``model`` first)."""
    at = raw.find(key)
    while at >= 0:
        head = _STRINGS.sub(b"", raw[:at])  # a quote left over: ``at`` is inside a string (``"a\\"messages":[``)
        if b'"' not in head and head.count(b"{") + head.count(b"[") - head.count(b"}") - head.count(b"]") == 1:
            return at
        at = raw.find(key, at + 1)
    return -1


_STRINGS = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')  # unrolled: no alternation per character


def round_trips_by_layout(raw: bytes, doc: Any, layout: Layout | None, full: Callable[[bytes, Any], bool]) -> bool:
    """``full(raw, doc)`` (``dumps(doc) == raw``) without re-serializing every message.

    ``layout`` already proved each message serializes to exactly the bytes it
    sits at, comma-separated, up to the closing bracket. What is left: the rest
    of the document. It is serialized with a marker in place of the messages;
    the bytes before and after the marker must be those around the messages.
    """
    msgs = doc.get("messages") if isinstance(doc, dict) else None
    if layout is None or not isinstance(msgs, list) or len(layout.ends) != len(msgs) or not msgs:
        return full(raw, doc)
    start = layout.ends[0] - layout.sizes[0] - 1  # the '[' that opens the messages
    end = layout.ends[-1] + 1  # just past the ']' that closes them
    if start < 0 or raw[start:start + 1] != b"[" or raw[end - 1:end] != b"]":
        return full(raw, doc)
    if around_messages(raw, doc, start, end):
        return True  # proven: the shell's bytes around the messages, the layout's bytes for them
    return full(raw, doc)  # anything else: the whole check decides


def around_messages(raw: bytes, doc: dict, start: int, end: int) -> bool:
    """Are the bytes of ``raw`` before ``start`` (the ``[`` that opens the messages) and from ``end``
    (just past their ``]``) exactly what ``doc`` serializes to around its messages?"""
    shell = dict(doc)
    shell["messages"] = _MARK
    try:
        data = dumps(shell)
    except TypeError:
        return False
    at = data.find(_MARK_BYTES)
    return at == start and data.find(_MARK_BYTES, at + 1) < 0 and data[:at] == raw[:start] \
        and data[at + len(_MARK_BYTES):] == raw[end:]


_MARK = "\u0000scalpel-messages\u0000"
_MARK_BYTES = dumps(_MARK)
