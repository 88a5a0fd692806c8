"""The payback policy's arithmetic: is a cut on a WARM cache worth its rewrite?

Cutting message ``p`` before the natural break re-bills, at the write rate,
every token from where the cache read then stops to the break; the saving is
the cut tokens at the read rate on each remaining turn. The policy cuts when
the saving repays the rewrite ``payback_factor`` times (see docs/economist.md
for what the bench measured).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from scalpel_desktop.surgery.plan import Break, Candidate, ConversationState, Plan, RequestShape
from scalpel_desktop.wire.cache_rules import LONGEST_TTL_S, LOOKBACK_BLOCKS


def remaining_turns(conv: ConversationState | None, settings: Any) -> int:
    """A conservative estimate of the turns a warm cut will keep saving.

    SPEC 5's estimate - the turns so far, clamped to payback_turns_min..max -
    made more conservative twice, both measured on the bench (docs/economist.md):

    * no more than the conversation's average run between natural breaks: at
      the next break the cut would have been free anyway, so a warm cut only
      earns until then;
    * halved: if session lengths follow the Lindy rule (a session that lasted
      T turns lasts another t with probability T / (T + t)), half the turns
      so far is reached two times in three. Without it one real session
      ended two turns after a warm cut and came out 6% dearer.
    """
    lo, hi = int(settings["payback_turns_min"]), int(settings["payback_turns_max"])
    turns = conv.turns if conv else 0
    estimate = max(lo, min(hi, turns))
    if conv and conv.natural_breaks:
        estimate = min(estimate, max(1, turns // (conv.natural_breaks + 1)))
    return max(1, estimate // 2)


def entry_before(conv: ConversationState | None, shape: RequestShape, p: int, margin: float) -> int:
    """Where the cache read stops when unit ``p`` changes: the end of the latest
    live entry at or before ``p`` that the last breakpoint's lookback reaches;
    0 (the start of the messages: the system entries still hit) when none does."""
    ents = conv.entries.get(shape.model, []) if conv else []
    n = len(shape.unit_hashes)
    blocks = shape.unit_blocks
    best = 0
    for units, at in ents:
        if units > p or units <= best or at + shape.ttl_s + margin < shape.at:
            continue
        if blocks is not None:
            distance = sum(blocks[units:n])  # blocks from that entry to the last one
        else:
            distance = 3 * (n - units)
        if distance <= LOOKBACK_BLOCKS:
            best = units
    return best


def payback_plan(shape: RequestShape, brk: Break, candidates: Sequence[Candidate], free: list[Candidate],
                 batch_min: int, conv: ConversationState | None, settings: Any,
                 rates_of: Callable[[str], Any]) -> Plan | None:
    """The best warm cut that repays its rewrite ``payback_factor`` times, or None.

    Cutting at unit ``p`` before the break re-bills, at the write rate, every
    token from where the cache read then stops (``entry_before``) to the
    break; the saving is the cut tokens at the read rate on each remaining
    turn (``remaining_turns``).
    """
    warm = [c for c in candidates if c.unit_index < brk.index]
    if not warm or shape.unit_tokens is None:
        return None
    rates = rates_of(shape.model)
    read = float(rates.cache_read)
    write = float(rates.write_1h if shape.ttl_s >= LONGEST_TTL_S else rates.write_5m)
    factor = float(settings["payback_factor"])
    margin = float(settings["ttl_margin_s"])
    remaining = remaining_turns(conv, settings)
    free_saving = sum(c.saving for c in free)
    unit_tokens = shape.unit_tokens
    prefix = [0]
    for t in unit_tokens:
        prefix.append(prefix[-1] + int(t))
    end = min(brk.index, len(unit_tokens))
    best: tuple[float, Plan] | None = None
    for p in sorted({c.unit_index for c in warm}, reverse=True):
        chosen = [c for c in warm if c.unit_index >= p]
        saving = sum(c.saving for c in chosen)
        if saving + free_saving < batch_min:
            continue
        start = entry_before(conv, shape, p, margin)
        region = prefix[end] - prefix[min(start, end)]
        # Cost now: the region is written (smaller by the cut) instead of read.
        extra = max(0, region - saving) * write - region * read
        # Saved later: the cut tokens are not read on each remaining turn.
        later = saving * read * remaining
        if later < factor * extra:
            continue
        net = later - extra
        if best is None or net > best[0]:
            ids = [c.id for c in chosen] + [c.id for c in free]
            plan = Plan(cut_ids=ids, action="cut", natural_break=brk,
                        tokens_cut=saving + free_saving, rewrite_tokens=region)
            plan.reason = (f"payback: {saving} warm tokens repay a {region}-token rewrite "
                           f"{later / extra if extra > 0 else float('inf'):.1f}x over {remaining} turns")
            plan.figures = {"break": brk.index, "break_reason": brk.reason, "units": len(shape.unit_hashes),
                            "candidates": len(candidates), "tokens_cut": plan.tokens_cut,
                            "warm_tokens": saving, "free_tokens": free_saving,
                            "rewrite_tokens": region, "cut_from": p, "read_stops_at": start,
                            "turns_est": remaining, "extra_usd": round(extra, 8),
                            "payback_usd": round(later, 8),
                            "payback_x": round(later / extra, 3) if extra > 0 else None}
            best = (net, plan)
    return best[1] if best else None
