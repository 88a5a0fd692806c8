"""Parse a request body re-using what the previous request of the conversation parsed.

Claude Code re-sends its whole history on every request, append-only except
the last message: a 2.9 MB body is mostly the previous body again. When the
new body's bytes start with the previous body's bytes up to the end of some
message k (and the byte after it is ``,`` or ``]``), messages 0..k are the
same JSON text, so their parsed objects are re-used as they are and only the
rest is parsed: ``{<keys before messages>,"messages":[`` + the new bytes
after message k is itself a valid document holding the new messages and
every other key, in the original order.

Message offsets are known only for a body that round-trips through
``jsoncodec.dumps`` (then each message is ``dumps(message)`` bytes long and
messages are separated by one comma); any other body is parsed in full and
never re-used. Views built over a re-used document can re-use the previous
view's analysis of the shared messages (``view_for(..., previous=view)``),
since the message objects are identical.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from scalpel_desktop.wire.jsoncodec import dumps, loads


@dataclass
class ParsedBody:
    raw: bytes
    doc: Any
    reused_messages: int = 0  # leading messages taken from the previous body
    _head: bytes | None = field(default=None, repr=False)  # b'{...,"messages":['
    _ends: list[int] | None = field(default=None, repr=False)  # end offset of each message in raw
    _ok: bool | None = field(default=None, repr=False)

    def _layout(self) -> bool:
        """Compute the head and message end offsets; False when the body's layout is not the compact one."""
        if self._ok is not None:
            return self._ok
        self._ok = False
        doc = self.doc
        if not isinstance(doc, dict) or not isinstance(doc.get("messages"), list):
            return False
        before = {}
        for k, v in doc.items():
            if k == "messages":
                break
            before[k] = v
        head = (dumps(before)[:-1] + (b"," if before else b"")) + b'"messages":['
        if not self.raw.startswith(head):
            return False
        ends: list[int] = []
        pos = len(head)
        raw = self.raw
        for m in doc["messages"]:
            pos += len(dumps(m))
            ends.append(pos)
            if pos >= len(raw) or raw[pos] not in b",]":
                return False
            pos += 1
        self._head, self._ends, self._ok = head, ends, True
        return True


def parse_body(raw: bytes, previous: ParsedBody | None = None) -> ParsedBody:
    """Parse ``raw``; re-use ``previous``'s message objects for the byte-identical prefix."""
    if previous is not None and previous._layout():
        got = _parse_tail(raw, previous)
        if got is not None:
            return got
    return ParsedBody(raw, loads(raw))


def _parse_tail(raw: bytes, prev: ParsedBody) -> ParsedBody | None:
    head, ends = prev._head, prev._ends
    assert head is not None and ends is not None
    if not ends or not raw.startswith(head):
        return None
    view = memoryview(prev.raw)
    # Usually all but the last message match (its cache marker moved): try that first.
    k = -1
    for guess in (len(ends) - 1, len(ends) - 2):
        if guess >= 0 and _shared(raw, view, ends[guess]):
            k = guess
            break
    if k < 0:
        lo, hi = 0, len(ends) - 1  # binary search for the last shared message
        while lo <= hi:
            mid = (lo + hi) // 2
            if _shared(raw, view, ends[mid]):
                k, lo = mid, mid + 1
            else:
                hi = mid - 1
    if k < 0:
        return None
    end = ends[k]
    sep = raw[end : end + 1]
    tail_doc = loads(head + (raw[end + 1 :] if sep == b"," else raw[end:]))
    if not isinstance(tail_doc, dict) or not isinstance(tail_doc.get("messages"), list):
        return None
    tail_doc["messages"] = prev.doc["messages"][: k + 1] + tail_doc["messages"]
    body = ParsedBody(raw, tail_doc, reused_messages=k + 1)
    # Offsets of the shared part are known already: extend them for the new messages.
    new_ends = list(ends[: k + 1])
    pos = end + 1
    for m in tail_doc["messages"][k + 1 :]:
        pos += len(dumps(m))
        new_ends.append(pos)
        if pos >= len(raw) or raw[pos] not in b",]":
            return body  # layout unknown: the body is right, it just will not be re-used later
        pos += 1
    body._head, body._ends, body._ok = head, new_ends, True
    return body


def _shared(raw: bytes, prev: memoryview, end: int) -> bool:
    return len(raw) > end and raw[end] in b",]" and raw.startswith(prev[:end])
