"""What the surgery stage remembers of a conversation's previous request.

Claude Code re-sends the whole history on every request, and everything but
the last message is the same bytes as last time. Hashing 2.9 MB again, and
re-analysing it, on every request would cost more than the 10 ms the whole
pipeline may add. So per conversation we keep the previous request's raw
bytes, where each message sits in them (``wire/layout.py``), the per-message
hashes, and the body we sent for it (with its stubs). A new request whose
bytes up to the end of the previous request's second-to-last message are
identical (one ``==`` on two slices) reuses all of that; only the new
messages are located and hashed.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Callable, Hashable

from scalpel_desktop.wire.held import MB, doc_bytes, layout_bytes, view_bytes
from scalpel_desktop.wire.layout import Layout, head_of


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
    # How many of the view's leading messages ``raw`` holds byte for byte: all of them for the
    # request analysed in full, fewer once a later request (``_fast``, which carries the view on)
    # rewrote or dropped one. Parse-reuse may borrow those parsed messages (``parsed``).
    view_prefix: int = 0

    def nbytes(self) -> int:
        """Estimated memory this snapshot keeps alive: the body as received and, when
        different, as sent, the layout and the sent hashes, and with a view its
        parsed document and analysis (``wire/held.py``: from the size and the message
        count, measured on real bodies)."""
        n, m = len(self.raw), len(self.layout.ends)
        sent = len(self.sent) if self.sent is not None and self.sent is not self.raw else 0
        held = n + sent + 2 * layout_bytes(m)
        if self.view is not None:
            held += doc_bytes(n, m) + view_bytes(n, m)
        return held

    def parsed(self) -> tuple[list, int] | None:
        """The view's parsed messages and how many of them a next request that repeats ``raw``
        through its second-to-last message repeats too (``pipeline/parse_reuse.py`` borrows them
        for a conversation it forgot); None without a view."""
        doc = getattr(self.view, "original_doc", None)
        msgs = doc.get("messages") if isinstance(doc, dict) else None
        if not isinstance(msgs, list):
            return None
        return msgs, min(self.view_prefix, len(msgs), len(self.layout.ends) - 1)

    def head(self) -> bytes:
        """``raw`` up to the end of its second-to-last message: what the next request repeats."""
        if self._head is None:
            self._head = head_of(self.raw, self.layout)
        return self._head


def messages_in(doc: Any) -> int:
    """How many messages a parsed body has (0 when ``messages`` is missing or not a list)."""
    msgs = doc.get("messages") if isinstance(doc, dict) else None
    return len(msgs) if isinstance(msgs, list) else 0


def _held(raw_len: int, messages: int) -> int:
    """What a snapshot of a body analysed in full holds (``Snapshot.nbytes`` with a view)."""
    return raw_len + 2 * layout_bytes(messages) + doc_bytes(raw_len, messages) + view_bytes(raw_len, messages)


# Default retention budget of the memo (the ``memo_mb`` setting), in estimated bytes held.
MEMO_MAX_BYTES = 32 * MB


class Memo:
    """The most recently used conversations' snapshots, bounded by count AND by bytes.

    Each snapshot keeps up to two copies of a body (as received, as sent), its
    parsed document and its view: about four times the body (``nbytes``), so a
    few long conversations would otherwise hold hundreds of MB. Least recently
    used first, snapshots are dropped until both bounds hold; a conversation
    whose snapshot was dropped is analysed in full on its next request
    (correct, only slower). A snapshot larger than the whole budget is not kept.
    Each snapshot's size is taken once, when it is put, and the same figure is
    taken off when it goes: a snapshot changed in between cannot skew the count.
    The surgery stage calls it under its own lock; ``snapshots`` may be read from
    another stage's thread (parse-reuse borrows parsed messages), so the table
    itself changes under a small lock of its own (``evicted`` is called outside it).
    """

    def __init__(self, size: int = 8, max_bytes: int = MEMO_MAX_BYTES,
                 evicted: Callable[[Hashable, Snapshot | None], None] | None = None):
        """``evicted(key, snapshot)``: told of every snapshot that goes, with it when it was pushed
        out (to make room), with None when it was dropped or replaced (``surgery/ghost.py``)."""
        self.size = size
        self._items: OrderedDict[Hashable, Snapshot] = OrderedDict()
        self._sizes: dict[Hashable, int] = {}
        self._bytes = 0
        self._guard = threading.Lock()
        self.evicted = evicted
        self.max_bytes = max_bytes

    @property
    def max_bytes(self) -> int:
        """The budget, in estimated bytes held (the ``memo_mb`` setting); lowering it drops at once."""
        return self._max_bytes

    @max_bytes.setter
    def max_bytes(self, value: int) -> None:
        self._max_bytes = int(value)
        self.shrink()

    @property
    def nbytes(self) -> int:
        """Estimated bytes held now (what ``max_bytes`` bounds)."""
        return self._bytes

    def __len__(self) -> int:
        return len(self._items)

    def get(self, key: Hashable) -> Snapshot | None:
        with self._guard:
            snap = self._items.get(key)
            if snap is not None:
                self._items.move_to_end(key)
        return snap

    def snapshots(self) -> tuple[Snapshot, ...]:
        """The snapshots held now, most recently used first (safe from any thread)."""
        with self._guard:
            return tuple(reversed(self._items.values()))

    def put(self, key: Hashable, snap: Snapshot) -> None:
        self.drop(key)
        size = snap.nbytes()
        if size > self.max_bytes or self.size <= 0:
            if self.evicted is not None:
                self.evicted(key, snap)  # too large to keep whole: what little it leaves is kept
            return
        with self._guard:
            self._items[key] = snap
            self._sizes[key] = size
            self._bytes += size
        self.shrink()

    def make_room(self, raw_len: int, messages: int) -> None:
        """Before a full analysis of a body of ``raw_len`` bytes and ``messages`` messages: drop
        the snapshots its own would push out anyway, so the old and the new analysis are not
        both alive at the peak (a body above the whole budget will not be kept: nothing goes)."""
        need = _held(raw_len, messages)
        if need > self.max_bytes:
            return
        while self._items and self._bytes + need > self.max_bytes:
            self.drop(next(iter(self._items)), pushed_out=True)

    def would_push_out(self, raw_len: int, messages: int) -> bool:
        """Could a full analysis of such a body be kept only by pushing another snapshot out (or
        not at all: above the whole budget)? (``surgery/ghost_turn.py``: then it is not made.)"""
        need = _held(raw_len, messages)
        if need > self.max_bytes or self.size <= 0:
            return True
        return bool(self._items) and (self._bytes + need > self.max_bytes or len(self._items) >= self.size)

    def shrink(self) -> None:
        """Drop least recently used snapshots until both bounds hold (after ``max_bytes`` changed too)."""
        while self._items and (len(self._items) > self.size or self._bytes > self.max_bytes):
            self.drop(next(iter(self._items)), pushed_out=True)

    def drop(self, key: Hashable, pushed_out: bool = False) -> None:
        with self._guard:
            snap = self._items.pop(key, None)
            if snap is not None:
                self._bytes -= self._sizes.pop(key)
        if self.evicted is not None:
            self.evicted(key, snap if pushed_out else None)
