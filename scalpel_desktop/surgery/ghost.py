"""What is kept of a conversation the memo dropped, so its next request need not wait for a full analysis.

The memo (``surgery/memo.py``) holds a few conversations' whole previous
request: the parsed document, the view, the raw bytes. Several long
conversations at once push each other out, and a conversation pushed out had
its next request parsed, laid out and analysed in full before it could go:
+18 ms at 3 MB, +97 ms for 9,000 small messages (issue 12).

When the memo drops a snapshot it leaves a ``Ghost``: a few numbers, the
sent hashes the economist holds anyway, the bytes of the messages its stubs
went into, and the doom analysis's ``Watch`` (``surgery/doom_watch.py``).
The next request takes the first-sighting lane (``pipeline/lane.py``: sent
before any stage parses it, analysed in full after its answer) only when all
of this holds, each a fact checked, none a guess:

1. it repeats the previous request's bytes through its second-to-last
   message (a 128-bit digest of that prefix, and its length), and that last message
   is unchanged but for its cache marker (its economist hash);
2. what follows round-trips through the codec (as the full path requires)
   and holds no logged cut; no cut was logged since the ghost for a result
   of the prefix;
3. the economist's natural break is at or after the previous last message:
   a warm cache, the same system, tools and settings (its own
   ``natural_break`` on the request's true shape);
4. the policy cuts only at the break or a result's death (``off``,
   ``cold``, ``death``: not ``payback``), no working directory is excluded,
   and the watch can follow the new results (``doom_watch.follow``: a result
   they supersede or repeat dies as the scan would have it die, and joins
   the candidates); the economist, asked about those candidates as the full
   path would ask, cuts none of them.

Then the full analysis would cut nothing new, and what it sends is known:
the previous request's sent prefix (its stubs re-applied: the same bytes)
and the new bytes. That is what goes out; the analysis after the answer
checks it (``first_sighting.analyse_after``).
"""

from __future__ import annotations

import logging
from array import array
from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import Any, Callable, Hashable, Iterable

from xxhash import xxh3_128_intdigest

from scalpel_desktop.accounting.context_regions import result_chars, working_directory
from scalpel_desktop.accounting.tokens import CHARS_PER_TOKEN_DEFAULT, estimate_tokens_bytes
from scalpel_desktop.surgery.digests import SIZE, Digests, ids_of, packed, packed_ids
from scalpel_desktop.surgery.result_facts import STUB_TOKENS, doom_limits
from scalpel_desktop.surgery.doom_watch import Watch, candidates, follow
from scalpel_desktop.surgery.pin import Pinnable
from scalpel_desktop.surgery.economist import tool_changes_beta
from scalpel_desktop.surgery.plan import Candidate, RequestShape
from scalpel_desktop.surgery.policies import policy_named
from scalpel_desktop.wire.cache_rules import MARKED_TAIL, MAX_BREAKPOINTS, message_ttl_s
from scalpel_desktop.wire.formats import view_for
from scalpel_desktop.wire.hashing import region_hash
from scalpel_desktop.wire.jsoncodec import dumps
from scalpel_desktop.wire.layout import COMMA, MESSAGES_KEY, around_messages, lay_out, split_at
from scalpel_desktop.wire.view import regions

log = logging.getLogger("scalpel.surgery")

# Ghosts kept at most (least recently dropped first out), and the memory they may hold.
GHOSTS_MAX = 64
GHOSTS_MAX_BYTES = 8 * 1024 * 1024
# Policies whose only warm cut is at a result's death (what the watch rules out); ``payback`` cuts any dead result.
_SERVED = frozenset({"off", "cold", "death"})
MARKER = b'"cache_control"'  # (counted as pin.pinnable counts them)


@dataclass(frozen=True)
class Ghost:
    units: int  # messages of the previous request
    head_len: int  # its bytes through its second-to-last message
    head_hash: int  # xxh3-128 of those bytes
    head_markers: int  # cache markers in them (the economist counts the free ones)
    sent_hashes: Any  # the economist's hash of each message as sent (packed: ``surgery/digests.py``)
    splices: tuple  # (start, end, sent bytes) of each message of the head that went out changed
    watch: Watch
    cut_mark: int  # the cut log's count of learned cuts when the ghost was made
    stubbed: Any  # the results it sent as stubs (``digests.packed_ids``: ``ids_of`` reads them)
    sizes: Any  # each message's compact bytes as received (an array: one allocation, as the hashes)
    pins: dict  # message -> may its last block take a marker, for the messages the economist's entries end at
    # For its next turn's record without the head (``surgery/ghost_turn.py``): each stub's (id, offset in the
    # sent head, tokens saved), the tool results' characters in the head (its context regions), its project.
    stubs: tuple = ()
    head_results: int = 0
    project: str | None = None

    def nbytes(self) -> int:
        return 200 + 24 * len(self.sent_hashes) + sum(len(b) + 100 for *_, b in self.splices) \
            + self.watch.nbytes() + len(self.stubbed) + 100 * (len(self.pins) + len(self.stubs))


@dataclass
class Turn:
    """What the lane found when a ghost vouched for a request: all a turn after the answer needs
    (``surgery/ghost_turn.py``) besides the answer itself. ``request``: the very request object
    (the lane hands the turn only to the exchange of that request)."""

    request: Any
    ghost: Ghost
    body: bytes  # what went out
    doc: dict  # the request without its first ``ghost.units - 1`` messages
    view: Any  # ... its view
    hashes: Any  # each message's economist hash as sent (``joined``: packed when the ghost's are)
    tail_sizes: list
    tail_ends: list  # where each message of ``doc`` ends in the body
    shape: RequestShape  # as the economist was asked (a warm policy's sizes and pins in it)
    spans: list  # the candidates the full analysis would find ([] when it would not look)
    looked: bool  # whether it would look for dead results at all
    cut_mark: int  # the cut log's mark when the lane checked: every cut before it was looked for
    policy: str  # the policy it was asked under


def ghost_of(snap: Any, cut_mark: int, marked: Iterable[int] = (), kept: Any = None) -> Ghost | None:
    """The ghost of a dropped snapshot, or None when it has no full analysis of its own body.
    ``marked``: the message counts the economist's cache entries for it end at (``pin_for`` asks
    whether the last of those messages may take a marker: the ghost answers for them)."""
    view = snap.view
    make = view.for_next.get("watch") if view is not None else None
    watch = make() if callable(make) else None
    layout = snap.layout
    n = len(layout.ends)
    if watch is None or n < 2 or watch.units != n or len(snap.sent_hashes) != n:
        return None
    ends, sizes = layout.ends, layout.sizes
    splices = []
    if snap.sent is not None:
        sent, raw, shift = snap.sent, snap.raw, snap.shift
        start0 = ends[0] - sizes[0]
        if shift[n - 1] != shift[n - 2] or sent[:start0] != raw[:start0]:
            return None  # the last message, or what precedes the messages, went out changed
        before = 0
        for i in range(n - 1):
            a, b = ends[i] - sizes[i], ends[i]
            got = sent[a + before: b + shift[i]]
            if shift[i] != before or got != raw[a:b]:
                splices.append((a, b, got))
            before = shift[i]
    head_len = ends[n - 2]
    msgs = view.original_doc.get("messages")
    pinnable = Pinnable(msgs)
    pins = {u - 1: pinnable[u - 1] for u in marked if 0 < u < n}
    head = memoryview(snap.raw)[:head_len]
    # (A ghost outlives the request that made it by many others': what it keeps per message is packed,
    # not one small object each scattered over the arenas that request's document filled; ``kept``:
    # the economist's packed hashes of that request, shared when they are these.)
    hashes = packed(snap.sent_hashes)
    if isinstance(kept, Digests) and isinstance(hashes, Digests) and kept.blob == hashes.blob:
        hashes = kept
    return Ghost(n, head_len, xxh3_128_intdigest(head), snap.raw.count(MARKER, 0, head_len), hashes,
                 tuple(splices), watch, cut_mark, packed_ids(view.replaced), array("I", layout.sizes), pins,
                 tuple((tid, off, saved) for tid, off, saved, _ in snap.stubs),
                 result_chars("messages", msgs[:n - 1]), working_directory(view.original_doc))


class Ghosts:
    """The ghosts of dropped conversations, bounded by count and by bytes (least recently dropped out)."""

    def __init__(self, cut_mark: Callable[[], int] = lambda: 0,
                 marked: Callable[[Hashable], Iterable[int]] = lambda key: (), size: int = GHOSTS_MAX,
                 max_bytes: int = GHOSTS_MAX_BYTES, kept: Callable[[Hashable], Any] = lambda key: None):
        """``cut_mark``: the cut log's ``mark`` (a ghost made now knows which cuts it has seen);
        ``marked(key)``: where the economist's cache entries for a conversation end; ``kept(key)``:
        the economist's hashes of its last request (``Economist.sent_hashes``: shared, not copied)."""
        self.cut_mark, self.marked, self.kept = cut_mark, marked, kept
        self.size, self.max_bytes = size, max_bytes
        self._items: OrderedDict[Hashable, tuple[Ghost, int]] = OrderedDict()
        self._bytes = 0
        # id() of the request ``ghost_body`` last refused in the lane: the usual path, which that
        # request takes next, does not ask again (an id reused meanwhile only costs a full path).
        self.refused: int | None = None
        # What the lane found for the request it last let through on a ghost's word (``ghost_body``'s
        # ``keep_turn``), until that request's exchange claims it (``claim``).
        self.turn: Turn | None = None

    def __len__(self) -> int:
        return len(self._items)

    def claim(self, request: Any) -> Turn | None:
        """The turn the lane found for this very request (None: another request's, or none)."""
        turn = self.turn
        if turn is None or turn.request is not request:
            return None
        self.turn = None
        return turn

    def get(self, key: Hashable) -> Ghost | None:
        got = self._items.get(key)
        return got[0] if got is not None else None

    def keep(self, key: Hashable, ghost: Ghost | None) -> None:
        self.drop(key)
        if ghost is None:
            return
        size = ghost.nbytes()
        if size > self.max_bytes:
            return
        self._items[key] = (ghost, size)
        self._bytes += size
        while len(self._items) > self.size or self._bytes > self.max_bytes:
            self.drop(next(iter(self._items)))

    def evicted(self, key: Hashable, snap: Any) -> None:
        """The memo let ``key``'s snapshot go: its ghost is kept when it was pushed out (``snap``),
        any older one dropped when it was dropped or replaced (None). Never raises (the memo's
        caller is on a request's path): a ghost that cannot be made is simply not kept."""
        ghost = None
        if snap is not None:
            try:
                ghost = ghost_of(snap, self.cut_mark(), self.marked(key), self.kept(key))
            except Exception:  # noqa: BLE001 - no ghost: the next request takes the full path
                log.exception("the ghost of a dropped conversation could not be made")
        self.keep(key, ghost)

    def drop(self, key: Hashable) -> None:
        got = self._items.pop(key, None)
        if got is not None:
            self._bytes -= got[1]


def ghost_body(stage: Any, request: Any, skeleton: Any, ckey: Hashable, policy: str,
               keep_turn: bool = False) -> bytes | None:
    """The bytes the full path would send for this request, when it is sure to cut nothing new
    (the module docstring's four conditions); None: the request needs the full path.
    ``keep_turn``: what was found is kept as ``stage.ghosts.turn`` (the lane's: ``Turn``)."""
    mark = 0
    if keep_turn:
        stage.ghosts.turn = None
        mark = stage.ghosts.cut_mark()  # (before the cut log is looked at)
    g = stage.ghosts.get(ckey)
    raw = request.body
    if g is None or policy not in _SERVED or stage._get("exclude_dirs"):
        return None
    k = g.units - 1
    if len(skeleton) < k + MARKED_TAIL or len(raw) <= g.head_len or raw[g.head_len] != COMMA:
        return None
    if xxh3_128_intdigest(memoryview(raw)[:g.head_len]) != g.head_hash or doom_limits(stage.config) != g.watch.limits:
        return None
    doc, tail_hashes, tail_sizes, tail_ends = _tail(raw, g.head_len)
    if doc is None or tail_hashes[0] != g.sent_hashes[k]:
        return None  # not JSON the codec writes back, or the last message changed (beyond its marker)
    view = view_for("messages", doc)
    ids = [r.id for r in view.tool_results] if view is not None else None
    if ids is None or stage.cutlog.any_known(ids) or _cut_since(stage.cutlog, g, raw):
        return None
    system, tools, settings = regions("messages", doc)
    shape = RequestShape(
        key=ckey, model=skeleton.model, at=request.received_at,
        unit_hashes=joined(g.sent_hashes, k, tail_hashes), tools_hash=region_hash(tools),
        system_hash=region_hash(system), settings_hash=region_hash(settings),
        ttl_s=message_ttl_s("messages", doc), tool_changes_ok=tool_changes_beta(request.headers))
    brk = stage.economist.natural_break(shape)
    if brk.index < k:
        return None  # a cold cache, or a changed prefix: a free cut may wait there
    asked = _nothing_new_to_cut(stage, g, request, shape, brk, doc, view, tail_sizes, policy) \
        if policy != "off" else (shape, [], False)
    if asked is None:
        return None
    if not g.splices:
        body = raw
    else:
        parts, at = [], 0
        for a, b, sent in g.splices:
            parts += (raw[at:a], sent)
            at = b
        parts.append(raw[at:])
        body = b"".join(parts)
    if keep_turn:
        used, spans, looked = asked
        if not used.total_tokens:  # (as the full path's shape has it: the body's estimate)
            used = replace(used, total_tokens=estimate_tokens_bytes(len(raw)))
        stage.ghosts.turn = Turn(request, g, body, doc, view, shape.unit_hashes, tail_sizes, tail_ends, used, spans, looked, mark, policy)
    return body


def _nothing_new_to_cut(stage: Any, g: Ghost, request: Any, shape: RequestShape, brk: Any, doc: dict, view: Any,
                        tail_sizes: list, policy: str) -> tuple | None:
    """Would the full analysis cut nothing? Its candidates, known from the watch when it can follow
    the new results (``follow``), put to the economist as the full path would put them. (The shape
    as asked, the candidates, whether it looked) when it would cut nothing; None when it might."""
    k = g.units - 1
    units = k + len(doc["messages"])
    watch = follow(g.watch, view, 1, units)
    if watch is None:
        return None
    pol = policy_named(policy)
    keep_recent = int(stage._get("keep_recent"))
    if not pol.looks_for_dead(sum(1 for r in view.tool_results if r.unit_index + k >= brk.index), keep_recent):
        return shape, [], False  # the full path would not look: nothing to cut
    spans = candidates(watch, units, watch.results, g.stubbed)
    if not spans:
        return shape, spans, True
    total = estimate_tokens_bytes(len(request.body))
    conv = stage.economist.conversations.get(shape.key)
    seen = conv.dead_seen if conv is not None else None
    seen_ids = ids_of(seen) if seen else frozenset()
    # The warm rule weighs only results dead before the break (and under ``death``, newly dead):
    # without one it returns before it reads the messages' sizes and pins (payback.payback_plan).
    weighed = [s for s in spans if s.unit_index < brk.index and not (getattr(pol, "only_new", False) and s.tool_use_id in seen_ids)]
    if pol.warm and weighed:  # (as SurgeryStage._shape builds it)
        sizes = list(g.sizes[:k]) + tail_sizes
        unit_pinnable, free = ([], 0) if "cache_control" in doc else \
            (_Pins(g.pins, k, doc["messages"]), max(0, MAX_BREAKPOINTS - g.head_markers
                                                    - request.body.count(MARKER, g.head_len)))
        shape = replace(shape, unit_tokens=[int(n / CHARS_PER_TOKEN_DEFAULT) for n in sizes],
                        unit_pinnable=unit_pinnable, free_markers=free, total_tokens=total)
    else:
        shape = replace(shape, total_tokens=total)
    try:
        plan = stage.economist.decide(shape, [Candidate(s.tool_use_id, s.unit_index, s.tokens, STUB_TOKENS, s.kind)
                                              for s in spans], policy=policy, brk=brk)
    except _NotPinned:
        return None  # the economist asked about a message the ghost cannot answer for
    finally:
        if conv is not None:
            conv.dead_seen = seen  # asked, not decided: the full analysis after the answer decides
    return None if plan.cut_ids else (shape, spans, True)


class _NotPinned(Exception):
    pass


class _Pins:
    """``pin.Pinnable`` for a request of which only the last messages are parsed: the ghost answers
    for the messages the economist's entries end at, the parsed ones answer for themselves."""

    def __init__(self, pins: dict, k: int, tail: list):
        self.pins, self.k, self.tail = pins, k, Pinnable(tail)

    def __len__(self) -> int:
        return self.k + len(self.tail)

    def __getitem__(self, i: int) -> bool:
        if i >= self.k:
            return self.tail[i - self.k]
        got = self.pins.get(i)
        if got is None:
            raise _NotPinned()
        return got


def joined(head: Any, k: int, tail: list) -> Any:
    """The first ``k`` of ``head``'s hashes and then ``tail``'s, packed when both are digests."""
    more = packed(tail)
    if isinstance(head, Digests) and isinstance(more, Digests):
        return Digests(head.blob[:k * SIZE] + more.blob)
    return tuple(head[:k]) + tuple(tail)


def _tail(raw: bytes, head_len: int) -> tuple[dict | None, list, list, list]:
    """The request without its first messages (those through ``head_len``), each remaining message's
    economist hash, size and end; (None, [], [], []) unless the whole body is what the codec writes back."""
    none: tuple = (None, [], [], [])
    got = split_at(raw, head_len)
    if got is None:
        return none
    start, head, msgs, rest = got
    bracket = start + len(MESSAGES_KEY) - 1
    if bracket >= head_len or not msgs:
        return none
    hashes: list = []
    sizes: list = []
    ends: list = []
    end = lay_out(raw, msgs, 0, head_len + 1, ends, sizes, hashes)
    doc = dict(head)
    doc["messages"] = msgs
    doc.update(rest)
    if end is None or not around_messages(raw, doc, bracket, end):
        return none
    return doc, hashes, sizes, ends


def _cut_since(cutlog: Any, g: Ghost, raw: bytes) -> bool:
    """A cut logged since the ghost for a result of its prefix (a resumed copy of the conversation
    cut it): the full path would re-apply it."""
    for tid in cutlog.learned_since(g.cut_mark):
        if raw.find(b'"tool_use_id":' + dumps(tid), 0, g.head_len) >= 0:
            return True
    return False
