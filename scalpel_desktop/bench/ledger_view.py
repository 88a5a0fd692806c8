"""What the user's ledger would have held when a replayed sequence started.

The warm policies read the user's own history (conversation lengths, idle
gaps, how long past its TTL a cache still answered, how earlier bets did) and
draw on the user's risk budget (``surgery/budget.py``). In a replay, the
ledger behind a sequence is the sequences that ended before it started: their
facts from the transcripts (``ledger_facts``, ``history_before``) and, per
stage arm, what that arm's cuts banked and staked and how its bets did there
(``budget_before``). So sequences replay in waves (``waves``): a sequence
starts once every one that ended before it has replayed.
"""

from __future__ import annotations

from collections.abc import Iterable

from scalpel_desktop.bench import parallel
from scalpel_desktop.bench.reader import Sequence
from scalpel_desktop.surgery.remaining import History


def waves(seqs: list[Sequence]) -> list[list[int]]:
    """The sequences in start order, cut into waves whose members ended after every other member
    started: each can replay with the budget of the waves before it, alongside the rest of its own."""
    order = sorted(range(len(seqs)), key=lambda i: (seqs[i].requests[0].ts, i))
    out: list[list[int]] = []
    for i in order:
        start = seqs[i].requests[0].ts
        if out and all(seqs[j].requests[-1].ts_done >= start for j in out[-1]):
            out[-1].append(i)
        else:
            out.append([i])
    return out


def budget_before(seqs: list[Sequence], seq: Sequence, results: list, arms: Iterable[str] = (),
                  start_usd: float = 0.0) -> tuple[dict, dict]:
    """Per stage arm, the user's risk budget (``surgery/budget.py``) and closed bets when ``seq``
    started: ``start_usd`` (what the ledger held before the replay) plus what the sequences that
    ended before it banked and staked under that arm (``arms``: the stage policies, each with and
    without its hint). Live, a conversation still going on counts as it goes: the bench's budget
    is the smaller."""
    from scalpel_desktop.surgery.budget import RiskBudget

    start = seq.requests[0].ts
    sums: dict[str, list[float]] = {arm + tail: [start_usd, 0.0] for arm in arms for tail in ("", ":hinted")}
    bets: dict[str, list] = {}
    for other, r in zip(seqs, results):
        if other is seq or r is parallel.FAILED or not other.requests or other.requests[-1].ts_done >= start:
            continue
        for arm, (banked, staked) in r.budget.items():
            acc = sums.setdefault(arm, [0.0, 0.0])
            acc[0] += banked
            acc[1] += staked
        for arm, got in r.bets.items():
            bets.setdefault(arm, []).extend(got)
    return {arm: RiskBudget(a, b) for arm, (a, b) in sums.items()}, bets


def ledger_facts(seqs: list[Sequence]) -> list[tuple[float, int, list[float], list] | None]:
    """What the ledger holds of each sequence (None: no request): when it ended, its length,
    its idle gaps (response end to the next request) and what the reads after gaps past the TTL
    say of the cache (``wire/cache_rules.overrun``). Found once for ``history_before``."""
    from scalpel_desktop.wire.cache_rules import TTL_SECONDS, overrun

    out: list = []
    for s in seqs:
        if not s.requests:
            out.append(None)
            continue
        pairs = list(zip(s.requests, s.requests[1:]))
        ttl = TTL_SECONDS["1h" if any(r.usage.cache_write_1h > 0 for r in s.requests) else "5m"]  # the sequence's
        seen = [o for a, b in pairs if (o := overrun(b.ts - a.ts_done, ttl, a.usage.cache_read,
                                                     b.usage.cache_read)) is not None]
        out.append((s.requests[-1].ts_done, len(s.requests), [max(0.0, b.ts - a.ts_done) for a, b in pairs], seen))
    return out


def history_before(seqs: list[Sequence], seq: Sequence, facts: list | None = None) -> History:
    """What the user's ledger would have held when ``seq`` started: the sequences that ended
    before, their lengths and idle gaps. ``facts``: ``ledger_facts(seqs)``, when the caller has them."""
    start = seq.requests[0].ts
    lengths, gaps, seen = [], [], []
    for other, f in zip(seqs, facts if facts is not None else ledger_facts(seqs)):
        if other is seq or f is None or f[0] >= start:
            continue
        lengths.append(f[1])
        gaps.extend(f[2])
        seen.extend(f[3])
    return History.of(lengths, gaps, overruns=seen)
