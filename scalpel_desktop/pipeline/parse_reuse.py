"""Parse only what is new: reuse the previous request's parsed messages.

Parsing a 2.9 MB body takes several ms, more than the whole budget of the
pipeline. But a Claude Code request repeats the previous one byte for byte up
to its last message. This stage - placed FIRST in the chain, before anything
reads ``ex.doc`` - finds a remembered body whose bytes the new one repeats up
to the end of that body's second-to-last message (one slice comparison), and
builds ``ex.doc`` from:

* the keys before ``"messages"`` (a few bytes, parsed);
* the remembered message objects for the repeated part;
* the rest of the body from there on (the new messages and the keys after
  them), parsed as one small JSON object.

Every new message is then checked to serialize back to exactly the bytes it
came from (``wire.layout.locate``); anything unexpected falls back to a
plain full parse. The result equals ``loads(raw)``. The message objects are
SHARED with the previous request's document: stages must treat ``ex.doc`` as
read-only (the conversation views rewrite copy-on-write).

The layout found (where each message sits, its hash) goes to
``ex.layout`` (and the body it re-used to ``ex.layout_base``) for the tool
filter and the surgery stage. ``ParseReuse.parse`` is the same
work without an exchange (tests, benchmarks): the one incremental parser.

Memory: each remembered body keeps its raw bytes and its parsed messages
(about three times the raw size again, and more for many small messages:
``wire/held.py``, from the size and the message count, measured on real bodies).
The bodies remembered are bounded by count (``size``) AND by what they hold
(``max_bytes``, the ``parse_reuse_mb`` setting), least recently used dropped
first: eight long conversations must not hold hundreds of MB. A body that was
dropped is simply parsed in full next time.

A first sighting (no remembered body matches) is parsed in full and goes on
at once; it is laid out and remembered in ``on_response``, after the answer
(the surgery stage's layout taken over when it had to find one anyway).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Callable, NamedTuple

from scalpel_desktop.exchange import Exchange
from scalpel_desktop.wire.held import MB, body_held
from scalpel_desktop.wire.jsoncodec import JSONDecodeError, loads, too_deep
from scalpel_desktop.wire.layout import Layout, LaidOutBody, locate, repeats, split_at

# Default budget (the ``parse_reuse_mb`` setting) of what the remembered bodies hold, in
# estimated bytes (raw + parsed messages + layout, ``wire/held.py``): LRU bodies are dropped beyond it.
PARSE_REUSE_MAX_BYTES = 20 * MB


class Parsed(NamedTuple):
    doc: Any
    layout: Layout | None  # where each message sits (None: not a messages body that round-trips)
    base: bytes | None  # the remembered body whose messages were re-used (None: parsed in full)


class _Remembered:
    __slots__ = ("raw", "messages", "layout", "snap", "held")

    def __init__(self, raw: bytes, messages: list, layout: Layout):
        self.raw = raw
        self.messages = messages
        self.layout = layout
        self.snap = LaidOutBody(raw, layout)
        # Estimated memory kept alive (the raw bytes, the parsed messages, the layout), taken once:
        # the same figure is added when it is remembered and taken off when it is forgotten.
        self.held = body_held(len(raw), len(layout.ends))

    def nbytes(self) -> int:
        return self.held


class ParseReuse:
    name = "parse-reuse"
    mutates = False

    def __init__(self, size: int = 8, min_bytes: int = 64 * 1024, max_bytes: int = PARSE_REUSE_MAX_BYTES,
                 budget: Callable[[], int] | None = None):
        """``budget``: the byte budget read live (the ``parse_reuse_mb`` setting); else ``max_bytes``."""
        self.size = size
        self.min_bytes = min_bytes  # below this a full parse is as cheap
        self.max_bytes = max_bytes
        self.budget = budget
        self._items: OrderedDict[int, _Remembered] = OrderedDict()
        self._bytes = 0  # estimated bytes held by the remembered bodies
        self._serial = 0
        self.reused = 0  # requests parsed incrementally (for tests and the benchmark)
        self._lock = threading.Lock()  # the proxy's pipeline runs on a thread pool

    def on_request(self, ex: Exchange) -> None:
        req = ex.request
        if req.endpoint != "messages" or len(req.body) < self.min_bytes or ex.parsed:
            return
        with self._lock:
            got = self._parse(req.body, later=True)
        if got is None:
            return  # not JSON: the lazy ``ex.doc`` says so
        ex.set_doc(got.doc)
        if got.layout is not None:
            ex.layout = got.layout
            ex.layout_base = got.base
        elif isinstance(got.doc, dict) and isinstance(got.doc.get("messages"), list):
            # A first sighting: laid out and remembered after the response (off the request path).
            ex.layout_later = got.doc["messages"]

    def on_turn(self, ex: Exchange) -> None:
        """A dropped conversation recorded from its new messages (``surgery/ghost_turn.py``): it is
        not remembered (the memo could not keep it either)."""

    def may_defer(self, request: Any, skeleton: Any) -> bool:
        """A first sighting for parse-reuse: no remembered body this one repeats (``pipeline/lane.py``)."""
        with self._lock:
            return self._find(request.body) is None

    def parse(self, raw: bytes) -> Parsed | None:
        """``loads(raw)``, re-using a remembered body's messages; None when ``raw`` is not JSON.

        The document's leading messages are the very objects of the body it
        re-used, so a view built with ``view_for(..., previous=that_view)``
        shares that view's analysis of them. (Without an exchange there is no
        "after the response": a body parsed in full is laid out at once.)
        """
        with self._lock:
            return self._parse(raw)

    def _parse(self, raw: bytes, later: bool = False) -> Parsed | None:
        hit = self._find(raw)
        doc = None
        layout = None
        if hit is not None:
            key, prev = hit
            doc = self._build(raw, prev)
            if doc is not None:
                layout = locate(raw, doc, prev.snap)
                if layout is None or layout.reused == 0:
                    doc = None
            self._forget(key)
        if doc is None:
            try:
                doc = loads(raw)
            except (JSONDecodeError, ValueError):
                return None
            if later:
                msgs = doc.get("messages") if isinstance(doc, dict) else None
                if isinstance(msgs, list):  # remembered after the response: what it pushes out goes now
                    self._make_room(body_held(len(raw), len(msgs)))
                return Parsed(doc, None, None)
            layout = locate(raw, doc, None)
        else:
            self.reused += 1
        if layout is None or not isinstance(doc, dict):
            return Parsed(doc, None, None)
        self._remember(raw, doc["messages"], layout)
        return Parsed(doc, layout, hit[1].raw if hit is not None and layout.reused else None)

    def _remember(self, raw: bytes, messages: list, layout: Layout) -> None:
        if self.budget is not None:
            try:
                self.max_bytes = int(self.budget())
            except Exception:  # noqa: BLE001 - a bad setting keeps the last budget
                pass
        item = _Remembered(raw, messages, layout)
        if item.held <= self.max_bytes and self.size > 0:  # a body above the whole budget is not kept
            self._serial += 1
            self._items[self._serial] = item
            self._bytes += item.held
        while self._items and (len(self._items) > self.size or self._bytes > self.max_bytes):
            self._forget(next(iter(self._items)))  # also when the budget was just lowered

    def _make_room(self, need: int) -> None:
        """Forget the least recently used bodies a body holding ``need`` would push out anyway, before
        it is kept, so both are not alive at once (one above the whole budget pushes nothing out)."""
        if need > self.max_bytes:
            return
        while self._items and self._bytes + need > self.max_bytes:
            self._forget(next(iter(self._items)))

    def on_response(self, ex: Exchange) -> None:
        """A first sighting's messages: laid out (or the layout the surgery stage found on the
        request path taken over) and remembered for the conversation's next request."""
        msgs = ex.layout_later
        if msgs is None:
            return
        ex.layout_later = None
        raw = ex.request.body
        layout = ex.layout if ex.layout is not None and ex.layout_base is None else None
        if layout is None or len(layout.ends) != len(msgs):
            try:
                layout = locate(raw, {"messages": msgs}, None)
            except Exception as e:  # noqa: BLE001 - only a body nested deeper than the codec writes
                if not too_deep(e):
                    raise
                return  # not a body to remember (the surgery stage says so in the decision)
        if layout is None:
            return
        ex.layout, ex.layout_base = layout, None  # the surgery stage's analysis after the response reuses it
        with self._lock:
            self._remember(raw, msgs, layout)

    @property
    def nbytes(self) -> int:
        """Estimated bytes the remembered bodies hold now (what ``max_bytes`` bounds)."""
        return self._bytes

    def __len__(self) -> int:
        return len(self._items)

    def _forget(self, key: int) -> None:
        old = self._items.pop(key, None)
        if old is not None:
            self._bytes -= old.held

    def _find(self, raw: bytes) -> tuple[int, _Remembered] | None:
        for key in reversed(self._items):
            prev = self._items[key]
            if len(prev.layout.ends) >= 2 and repeats(raw, prev.snap, len(prev.layout.ends) - 1):
                return key, prev
        return None

    @staticmethod
    def _build(raw: bytes, prev: _Remembered) -> dict | None:
        """The document of ``raw``, reusing ``prev``'s messages up to its second-to-last."""
        k = len(prev.layout.ends) - 1
        got = split_at(raw, prev.layout.ends[k - 1])
        if got is None:
            return None
        _, head_doc, new_msgs, tail_doc = got
        doc = dict(head_doc)
        doc["messages"] = prev.messages[:k] + new_msgs
        doc.update(tail_doc)
        return doc
