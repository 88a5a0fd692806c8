"""The warm policies' arithmetic: is a cut on a WARM cache worth its rewrite?

Cutting unit ``p`` before the natural break re-bills, at the write rate,
every token from where the cache read then stops to the break; the saving is
the cut tokens at the read rate on each later request until the horizon
(``surgery/remaining.py``: the session's end, the next TTL break, the next
compaction). The cut is made when the saving repays the rewrite
``payback_factor`` times.

No cliffs: where the read stops must be CERTAIN, not estimated from a block
count (the lookback is undocumented: about 20 blocks). So the read boundary is

* **pinned**: the free 4th cache marker (Claude Code uses 3 of 4) goes on the
  last block of the newest earlier entry at or before the cut that is surely
  live - written or hit by a request we sent, its response confirmed, within
  its TTL counted from when it was SENT (so it holds whether or not a hit at
  another breakpoint refreshed it) minus ``ttl_margin_s``, and whose prefix is
  this request's. A marker looks up its own block first, so the read stops
  there under any lookback; the marker is not part of the cached content, so
  it changes no cache key;
* **pinned by a moved marker**: where the client sends all 4 markers, the one
  on ``messages[-2]`` moves to the pin (``surgery/pin.py``). This request
  costs the same as with an added one; what it no longer writes is the entry
  at ``messages[-2]``, which only a request replacing this one's last message
  (Esc withdraws a turn) would have read. That request then reads from the pin
  (or a later entry of the cut prefix) and re-writes up to ``messages[-2]``
  instead of reading it: the bet's worst case adds that re-write (at the
  dearest write rate: the client picks that request's TTL), once - the
  replacing request's own marker writes the entry again. Certain only where
  that request's marker on ``messages[-2]`` surely looks back to the pin
  (``pin.REACH_BLOCKS``) and the entry it falls back to lives as long as the
  one it replaces (the moved marker's TTL is the shortest, or no entry the
  conversation wrote has a shorter one): else no move;
* or, where no marker can be placed (4 already and none movable, or a block
  that cannot carry one), priced at its **worst case**: nothing is surely
  read, not even the system prompt (when a hit refreshes only the entry read,
  its entry lapses mid-session), the whole prompt up to the break is re-written.

Never inside a live cache the request does not extend (another model's, an
older history of its own): a re-write there has no pin (``Break.others_index``).

The payback rule is a bet on the future; its loss, should the conversation end
or be compacted right after the cut, is the priced rewrite. So a warm cut is
paid from the user's risk budget (``surgery/budget.py``: what every cut surely
saved, across conversations and restarts, less what every bet staked), and no
one conversation may stake more than its own savings plus ``risk_cap_pct`` of
what it has cost so far.

``cut at death`` (the ``death`` policy) considers only results that died in
this very request: the tail since the newest live entry is small then, and
the remaining turns are all still ahead.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from scalpel_desktop.surgery.budget import RiskBudget, refusal
from scalpel_desktop.surgery.digests import ids_of
from scalpel_desktop.surgery.pin import REACH_BLOCKS
from scalpel_desktop.surgery.plan import (
    MIN_CACHEABLE_GUARD,
    Break,
    Candidate,
    ConversationState,
    EntryMark,
    Plan,
    RequestShape,
    prefix_digest,
)
from scalpel_desktop.surgery.remaining import History, Horizon, horizon
from scalpel_desktop.wire.cache_rules import CACHE_TTLS, LONGEST_TTL_S, TTL_SECONDS


def moved_marker(conv: ConversationState | None, shape: RequestShape) -> int | None:
    """The message whose marker a pin would move (none free): ``messages[-2]``, when the client marks
    the last two messages and a request replacing the last one surely falls back no further than an
    entry living as long as the moved one (its TTL the shortest, or none of the conversation's
    entries shorter). None: no marker may move."""
    pinnable = shape.unit_pinnable
    moves = getattr(pinnable, "moves_from", None)
    if conv is None or shape.free_markers >= 1 or moves is None:
        return None
    ttl = float(getattr(pinnable, "moved_ttl_s", LONGEST_TTL_S))
    if ttl > min(TTL_SECONDS[t] for t in CACHE_TTLS) and \
            any(m.ttl_s < ttl for m in conv.entries.get(shape.model, ())):
        return None
    return int(moves)


def pin_for(conv: ConversationState | None, shape: RequestShape, p: int, margin: float) -> EntryMark | None:
    """The newest surely-live entry this request shares that ends at or before unit ``p``
    and whose last block may take a marker (None: no pin possible). With no marker free, one
    whose block a moved marker may take: before ``messages[-2]`` and within ``REACH_BLOCKS`` of it."""
    if conv is None or shape.unit_pinnable is None:
        return None
    moves = moved_marker(conv, shape) if shape.free_markers < 1 else None
    if shape.free_markers < 1 and moves is None:
        return None
    pinnable = shape.unit_pinnable
    best: EntryMark | None = None
    digests: dict[int, int] = {}
    for mark in conv.entries.get(shape.model, ()):
        u = mark.units
        if u < 1 or u > p or (best is not None and u <= best.units):
            continue
        if not mark.surely_live(shape.at, margin) or u > len(pinnable) or not pinnable[u - 1]:
            continue
        if moves is not None and (u - 1 >= moves or not 0 <= pinnable.reach(u - 1) <= REACH_BLOCKS):
            continue  # the moved marker's fallback would not surely reach it
        if mark.tokens and mark.tokens < MIN_CACHEABLE_GUARD:
            continue  # maybe too short to have been cached at all
        d = digests.get(u)
        if d is None:
            d = digests[u] = prefix_digest(shape, shape.unit_hashes, u)
        if d == mark.digest:
            best = mark
    return best


def payback_plan(shape: RequestShape, brk: Break, candidates: Sequence[Candidate], free: list[Candidate],
                 batch_min: int, conv: ConversationState | None, settings: Any,
                 rates_of: Callable[[str], Any], history: History | None = None,
                 only_new: bool = False, budget: RiskBudget | None = None) -> Plan | None:
    """The best warm cut that repays its rewrite ``payback_factor`` times, or None; a plan that cuts
    nothing (``action`` "unchanged") when one would repay it but the risk budget said no (its reason).

    ``only_new``: consider only results that were not dead at the previous decision (cut at death)."""
    warm = [c for c in candidates if c.unit_index < brk.index]
    if only_new and conv is not None:
        seen = ids_of(conv.dead_seen)
        warm = [c for c in warm if c.id not in seen]
    if not warm or shape.unit_tokens is None:
        return None
    rates = rates_of(shape.model)
    read = float(rates.cache_read)
    write = float(rates.write_1h if shape.ttl_s >= LONGEST_TTL_S else rates.write_5m)
    factor = float(settings["payback_factor"])
    margin = float(settings["ttl_margin_s"])
    unit_tokens = shape.unit_tokens
    hz: Horizon = horizon(history, model=shape.model, so_far=conv.turns if conv else 0,
                          conv_breaks=conv.natural_breaks if conv else 0, ttl_s=shape.ttl_s, margin=margin,
                          tokens_now=shape.total_tokens, first_tokens=conv.first_tokens if conv else 0,
                          factor=factor, cap=int(settings["payback_turns_max"]))
    remaining = hz.turns
    if remaining < 1:
        return None
    free_saving = sum(c.saving for c in free)
    prefix = [0]
    for t in unit_tokens:
        prefix.append(prefix[-1] + int(t))
    before_units = max(0, shape.total_tokens - prefix[-1])  # tools and system
    end = min(brk.index, len(unit_tokens))
    best: tuple[float, Plan] | None = None
    cap_pct = float(settings["risk_cap_pct"])
    banked, staked, cost = (conv.banked_usd, conv.staked_usd, conv.cost_usd) if conv is not None else (0, 0, 0)
    bank = budget.balance_usd if budget is not None else 0.0
    refusals: list[str] = []  # why a cut that repays its rewrite was not made (the row's reason)
    for p in sorted({c.unit_index for c in warm}, reverse=True):
        if p < brk.others_index:
            break  # inside a live cache this request does not extend: its re-write has no pin
        chosen = [c for c in warm if c.unit_index >= p]
        saving = sum(c.saving for c in chosen)
        if saving + free_saving < batch_min:
            continue
        pin = pin_for(conv, shape, p, margin)
        moved = moved_marker(conv, shape) if pin is not None and shape.free_markers < 1 else None
        if moved is not None and any(c.unit_index > moved for c in chosen):
            pin = moved = None  # (a cut in the last message: a request replacing it would drop it)
        if pin is not None:
            start, boundary = pin.units, "pinned"
            region = prefix[end] - prefix[min(start, end)]
        else:
            # Nothing surely read, not even the system prompt (under "a hit refreshes only the
            # entry read" its entry may have lapsed mid-session): everything up to the break.
            start, boundary = -1, "worst-case"
            region = before_units + prefix[end]
        # Cost now: the region is written (smaller by the cut) instead of read.
        extra = max(0, region - saving) * write - region * read
        fallback = 0.0
        if moved is not None:
            # A request replacing this one's last message re-writes from the pin to messages[-2]'s
            # end (less the cut) where it would have read it: once, at the dearest write rate.
            region2 = prefix[min(moved + 1, len(unit_tokens))] - prefix[min(start, len(unit_tokens))]
            fallback = max(0, region2 - saving) * (float(rates.write_1h) - read)
            extra += fallback
        # Saved later: the cut tokens are not read on each remaining turn.
        later = saving * read * remaining
        if later < factor * extra:
            continue
        refused = refusal(budget, extra, staked, banked, cost, cap_pct)
        if refused is not None:
            if not refusals:  # (the first refused is the smallest cut: the one the note names)
                refusals.append(f"warm: {saving} dead tokens from unit {p} not cut: {refused}")
            continue  # more than the user's cuts have surely saved, or past this conversation's cap
        net = later - extra
        if best is None or net > best[0]:
            ids = [c.id for c in chosen] + [c.id for c in free]
            plan = Plan(cut_ids=ids, action="cut", natural_break=brk,
                        tokens_cut=saving + free_saving, rewrite_tokens=region, risk_usd=extra)
            if pin is not None and pin.units < len(shape.unit_hashes):
                plan.pin_unit = pin.units - 1
                plan.pin_ttl = "1h" if shape.ttl_s >= LONGEST_TTL_S else "5m"
            label = "at death" if only_new else "payback"
            plan.reason = (f"{label}: {saving} warm tokens repay a {region}-token rewrite "
                           f"{later / extra if extra > 0 else float('inf'):.1f}x over {remaining} turns "
                           f"({f'{boundary} at unit {start}' if start >= 0 else 'worst case: nothing read'}"
                           f"{f', marker moved from message {moved}' if moved is not None else ''}; "
                           f"bound: {hz.bound})")
            plan.figures = {"break": brk.index, "break_reason": brk.reason, "units": len(shape.unit_hashes),
                            "candidates": len(candidates), "tokens_cut": plan.tokens_cut,
                            "warm_tokens": saving, "free_tokens": free_saving,
                            "rewrite_tokens": region, "cut_from": p, "read_stops_at": start,
                            "boundary": boundary, "pin_unit": plan.pin_unit, "moved_from": moved,
                            "fallback_usd": round(fallback, 8),
                            "extra_usd": round(extra, 8), "payback_usd": round(later, 8),
                            "payback_x": round(later / extra, 3) if extra > 0 else None,
                            "budget_usd": round(bank, 8), "conv_banked_usd": round(banked, 8),
                            "conv_staked_usd": round(staked, 8), "conv_cost_usd": round(cost, 8),
                            "payback_factor": factor, **hz.figures()}
            best = (net, plan)
    if best is None and refusals:  # a plan that cuts nothing: the economist's free rule still decides
        return Plan(natural_break=brk, reason=refusals[0])
    return best[1] if best else None
