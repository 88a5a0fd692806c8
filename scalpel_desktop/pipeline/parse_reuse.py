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

Before that full parse it asks ``borrow`` (the surgery stage's memo,
``surgery/memo.py``): a conversation the memo still holds, whose body this
stage forgot, is built from the parsed messages of the memo's snapshot
(``Snapshot.parsed``: those its body repeats) and the rest of the body. The
two bound what they keep separately, by different budgets; when several
long conversations take turns, the memo may hold one this stage no longer
does, and without the borrow each of its requests was parsed in full on the
request path (issue 12's evicted 1 MB: 14 of 20 requests).
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from typing import Any, Callable, Iterable, NamedTuple

from scalpel_desktop.exchange import Exchange
from scalpel_desktop.wire.held import MB, body_held
from scalpel_desktop.wire.jsoncodec import JSONDecodeError, loads, too_deep
from scalpel_desktop.wire.layout import Layout, LaidOutBody, locate, repeats, split_at

log = logging.getLogger("scalpel.pipeline")

# Default budget (the ``parse_reuse_mb`` setting) of what the remembered bodies hold, in
# estimated bytes (raw + parsed messages + layout, ``wire/held.py``): LRU bodies are dropped beyond it.
PARSE_REUSE_MAX_BYTES = 20 * MB


class Parsed(NamedTuple):
    doc: Any
    layout: Layout | None  # where each message sits (None: not a messages body that round-trips)
    base: bytes | None  # the remembered body whose messages were re-used (None: parsed in full)


class _Remembered:
    __slots__ = ("raw", "messages", "layout", "snap", "held", "usable")

    def __init__(self, raw: bytes, messages: list, layout: Layout, usable: int | None = None):
        """``usable``: how many of ``messages`` lead ``raw`` byte for byte (None: all of them)."""
        self.raw = raw
        self.messages = messages
        self.layout = layout
        self.snap = LaidOutBody(raw, layout)
        self.usable = len(messages) if usable is None else usable
        # Estimated memory kept alive (the raw bytes, the parsed messages, the layout), taken once:
        # the same figure is added when it is remembered and taken off when it is forgotten.
        self.held = body_held(len(raw), len(layout.ends))

    def nbytes(self) -> int:
        return self.held


class ParseReuse:
    name = "parse-reuse"
    mutates = False

    def __init__(self, size: int = 8, min_bytes: int = 64 * 1024, max_bytes: int = PARSE_REUSE_MAX_BYTES,
                 budget: Callable[[], int] | None = None, borrow: Callable[[], Iterable[Any]] | None = None):
        """``budget``: the byte budget read live (the ``parse_reuse_mb`` setting); else ``max_bytes``.
        ``borrow``: bodies laid out and parsed elsewhere, most recent first, each with ``raw``,
        ``layout`` and ``parsed()`` -> (messages, how many lead ``raw``) or None (the memo's)."""
        self.size = size
        self.borrow = borrow
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

    veto_for_speed = True  # (its no to the lane only means the usual path is cheaper: pipeline/lane.py)

    def may_defer(self, request: Any, skeleton: Any) -> bool:
        """A first sighting for parse-reuse: no body this one repeats, of its own or the memo's (which
        keeps the request on the usual path: no skeleton read to hear so) (``pipeline/lane.py``)."""
        with self._lock:
            return self._find(request.body) is None and self._borrowed(request.body, look_only=True) is None

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
        prev = hit[1] if hit is not None else self._borrowed(raw)
        doc = None
        layout = None
        if prev is not None:
            doc = self._build(raw, prev)
            if doc is not None:
                layout = locate(raw, doc, prev.snap)
                if layout is None or layout.reused == 0:
                    doc = None
            if hit is not None:
                self._forget(hit[0])
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
        return Parsed(doc, layout, prev.raw if prev is not None and layout.reused else None)

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

    def _borrowed(self, raw: bytes, look_only: bool = False) -> Any:
        """A body laid out and parsed elsewhere that ``raw`` repeats (``borrow``), or None (``look_only``:
        that body itself, parsed messages or not). Any failure there is a plain miss: the body is
        parsed in full, as without it."""
        if self.borrow is None:
            return None
        try:
            for other in self.borrow():
                if len(other.layout.ends) >= 2 and repeats(raw, other, len(other.layout.ends) - 1):
                    if look_only:
                        return other
                    got = other.parsed()
                    return None if got is None or got[1] < 1 else _Remembered(other.raw, got[0], other.layout, got[1])
        except Exception:  # noqa: BLE001
            log.exception("borrowing parsed messages failed; parsed in full")
        return None

    @staticmethod
    def _build(raw: bytes, prev: _Remembered) -> dict | None:
        """The document of ``raw``, reusing ``prev``'s messages up to its second-to-last (or as
        many as lead its bytes: ``usable``), the rest parsed from ``raw``."""
        k = min(len(prev.layout.ends) - 1, prev.usable)
        got = split_at(raw, prev.layout.ends[k - 1])
        if got is None:
            return None
        _, head_doc, new_msgs, tail_doc = got
        doc = dict(head_doc)
        doc["messages"] = prev.messages[:k] + new_msgs
        doc.update(tail_doc)
        return doc
