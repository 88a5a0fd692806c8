"""A dropped conversation's turn: its request recorded from its new messages alone.

The lane sends a request its ghost vouches for before any stage parses it
(``surgery/ghost.py``, ``pipeline/lane.py``). After the answer the stages
used to parse the whole body and analyse it in full, as for a first
sighting, to record it and to put the conversation back in the memo. When
the memo cannot hold it again without pushing another conversation out
(several long conversations taking turns: issue 12's ten of 2.6 MB), that
full parse on every request is what the process's memory goes to (about
190,000 dicts for 7,900 messages, each time, beside the next request's
work) and it buys nothing: the next conversation's request pushes it out
again. Then the stages take a *turn* instead (``wants_turn``); each records
the request from what the lane parsed - the messages after the ghost's
head - and what the ghost keeps of that head:

* the surgery stage (``take_turn``): the economist's decision and record,
  from the very shape, candidates and break ``first_sighting.analyse_after``
  would use (the lane computed them to vouch); the re-applied stubs at their
  offsets in the head (the same bytes as last time); and the conversation's
  next ghost: its head grown by this request's messages, its watch advanced
  over the new results (``doom_watch.advance``). When the watch cannot be
  advanced the ghost is dropped: the next request takes the full path;
* identify: the context regions (the head's tool-result characters are the
  ghost's) and the project (the ghost's: the system prompt is unchanged, or
  the economist's break would have sent the request to the full path);
* the inventory: the calls in the new messages (it scans only those anyway).

Nothing here is estimated that the full path does not estimate the same
way: tests/surgery/test_ghost_turn.py runs real sessions with turns and with
full analyses and compares every record.
"""

from __future__ import annotations

import logging
from array import array
from typing import Any

from xxhash import xxh3_128_intdigest

from scalpel_desktop.accounting.context_regions import result_chars
from scalpel_desktop.exchange import Exchange, SurgerySent
from scalpel_desktop.surgery.doom_watch import advance
from scalpel_desktop.surgery.ghost import MARKER, Ghost, Turn
from scalpel_desktop.surgery.pin import Pinnable
from scalpel_desktop.surgery.plan import Candidate, Plan
from scalpel_desktop.surgery.policies import policy_named
from scalpel_desktop.surgery.result_facts import STUB_TOKENS, doom_limits
from scalpel_desktop.wire.held import MB

log = logging.getLogger("scalpel.surgery")


def wants_turn(stage: Any, turn: Turn) -> bool:
    """A turn rather than the full analysis: the memo could keep this conversation's analysis only
    by pushing another one out (or not at all), and the settings the lane asked under still hold."""
    if not stage.take_turns or turn.policy != stage._get("policy") or doom_limits(stage.config) != turn.ghost.watch.limits \
            or stage._get("exclude_dirs"):
        return False
    units = turn.ghost.units - 1 + len(turn.doc["messages"])
    stage.memo.max_bytes = int(stage._get("memo_mb")) * MB
    return stage.memo.would_push_out(len(turn.request.body), units)


def take_turn(stage: Any, ex: Exchange, turn: Turn) -> None:
    """The surgery stage's record of ``ex`` (sent as ``turn.body``), as ``analyse_after`` makes it."""
    g = turn.ghost
    key = ex.key
    ckey = (key.session_id, key.agent_id)
    pol = policy_named(turn.policy)
    shape = turn.shape
    brk = stage.economist.natural_break(shape)
    candidates = [Candidate(s.tool_use_id, s.unit_index, s.tokens, STUB_TOKENS, s.kind) for s in turn.spans]
    plan = stage.economist.decide(shape, candidates, policy=pol.name, brk=brk)
    if plan.cut_ids:  # the lane asked the same question: say so rather than record a cut never sent
        log.warning("a dropped conversation went out as its ghost said where the economist now cuts (%s)", plan.reason)
        plan = Plan(natural_break=brk, reason=f"sent before its analysis; {plan.reason}", figures=plan.figures)
    serial = stage.economist.record_sent(shape, turn.hashes, brk)
    body = turn.body
    ex.surgery = sent = SurgerySent(serial, ckey, ex.model)
    size = max(1, len(body))
    sent.stubs = [(tid, off / size, saved, "replayed") for tid, off, saved in g.stubs]
    sent.bytes_removed = len(ex.request.body) - len(body)
    stage.ghosts.keep(ckey, next_ghost(stage, ckey, turn))
    dead = {"dead_left": sum(s.tokens for s in turn.spans)} if turn.looked else None
    stage._decide(ex, plan, replayed=len(g.stubs), cuts=[], removed=sum(saved for _, _, saved in g.stubs),
                  extra=dead)


def next_ghost(stage: Any, ckey: Any, turn: Turn) -> Ghost | None:
    """The ghost of the request ``turn`` sent: what its full analysis's snapshot would leave
    (``ghost.ghost_of``), from the old ghost and the new messages; None when the watch cannot be
    advanced (a failed result's death would be scheduled: only the full scan knows which)."""
    g = turn.ghost
    k = g.units - 1
    tail = turn.doc["messages"]
    n = k + len(tail)
    watch = advance(g.watch, turn.view, 1, n)
    if watch is None:
        return None
    raw = turn.request.body
    head_len = turn.tail_ends[n - 2 - k] if n - 2 >= k else g.head_len
    pinnable = Pinnable(tail)
    pins = {}
    for u in stage.economist.entry_units(ckey):
        i = u - 1
        if 0 <= i < n - 1:
            if i >= k:
                pins[i] = pinnable[i - k]
            elif i in g.pins:
                pins[i] = g.pins[i]  # (one it cannot answer for sends a warm weighing to the full path)
    head = memoryview(raw)[:head_len]
    return Ghost(n, head_len, xxh3_128_intdigest(head), raw.count(MARKER, 0, head_len), turn.hashes, g.splices,
                 watch, turn.cut_mark, g.stubbed, _sizes(g.sizes, k, turn.tail_sizes), pins, g.stubs,
                 g.head_results + result_chars("messages", tail[:-1]), g.project)


def _sizes(head: Any, k: int, tail: list) -> array:
    sizes = array("I", head[:k])
    sizes.extend(tail)
    return sizes
