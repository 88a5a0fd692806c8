"""The cache keeper's rule: keep a paused conversation's cache warm only while that pays.

When an answer ends and Claude Code waits (for the person, or a long tool),
the conversation's cache entry lives one TTL (5 minutes, or 1 hour) from its
last use. A person who comes back later finds it gone: the next request
re-writes the whole prefix ``P`` at the write price instead of reading it.
A keep-alive request (a *ping*: the same prefix, ``max_tokens`` 1) reads the
entry and so refreshes it, for one more TTL.

What one pause can save, per token of the price table (``w``: the write rate at
the conversation's TTL, ``r``: the cache read rate):

* a ping costs ``c = P x r`` (plus the uncached tail after the last marker and
  one output token, at their rates);
* a return the pings kept warm avoids the re-write, ``P x (w - r)``, **less
  what the cold break would have let go free** (``F``): at a TTL break the
  economist cuts the ``D`` dead tokens still in the prompt for free (when they
  make a batch of ``batch_min_tokens``), so they are not re-written (``D x w``)
  and not read again on the ``H`` requests after (``D x r x H``; ``H`` the
  median of the requests the conversation still gets, from the user's own
  history: neither the cut's optimism nor the keep's). ``A = P (w - r) - F``.

When to ping: before the entry can expire. The TTL runs from the entry's last
use, which is no earlier than when the request was sent (``sent``), so ping
``k`` goes at ``sent + k x (TTL - lead)``, where the lead covers the clock's
uncertainty (the economist's TTL margin, learned from the user's own reads,
``surgery/ttl_margin.py``), the keeper's clock check (once a second) and the
ping's own time to be read (the request's time to first byte).

Whether: the user's own pauses (``Pauses``: how long after an answer they came
back, from the ledger, and how many answers nobody came back to: the ends of
their conversations). Ping ``k`` is only sent if nobody came back by then
(pause ``g_k``), and it pays only if the person comes back when the cache is
surely gone without it and surely there with it: after the last use before it
(the answer's end for the first ping, the ping before for the others) plus the
TTL and the margin, and before ``g_k + TTL`` (a ping's use is no earlier than
its sending). Given no return by ``g_k``, pinging ``k .. n`` is worth

    V_k(n) = sum_{j=k..n} [A x (returns in (g_{j-1} + TTL + margin, g_j + TTL]) - c x (pauses > g_j)] / (pauses > g_k)

(``g_0 = 0``: the answer's end).

and ping ``k`` is sent while ``max_n V_k(n) > 0`` (the best continuation
pays in expectation; the first ``k`` where none does ends the pause: a lapsed
cache cannot be pinged back). At most ``floor(A / c)`` pings per pause, the
**ski-rental bound**: rent (ping) only until the rent paid equals the price of
buying (the re-write), so whatever the person does the pause costs at most
twice what the best choice in hindsight costs. Too few of the user's pauses
reach the first ping (``MIN_PAUSES``): no ping, the ledger has not shown that
this person comes back. Every ping's worst case (nobody comes back: its cost)
is staked from the user's risk budget under the conversation's cap
(``surgery/budget.py``) before it is sent; none is sent that the budget or the
cap refuses, and the rule weighs only as many pings as they can fund when the
pause starts (a pause pinged halfway and then refused pays for pings that keep
nothing).

Pure arithmetic on what the caller hands in: no clock, no I/O, no constant
fitted on any corpus (``MIN_PAUSES`` is ``remaining.min_sample`` at the
payback factor's default, the rest are the price table and the user's data).
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from scalpel_desktop.wire.usage import Usage

TICK_S = 1.0  # the keeper looks at the clock at least this often (proxy/keeper.py)
MIN_PAUSES = 3  # pauses at least as long as the first ping's before the ledger is believed
STOP_REASONS = ("end_turn", "tool_use")  # answers after which Claude Code waits (the person, or a tool)


@dataclass(frozen=True)
class Pauses:
    """The user's pauses after an answer: the seconds until the next request of the same conversation
    (sorted), and how many answers were never followed (a conversation's last)."""

    returned: tuple[float, ...] = ()
    ended: int = 0

    @classmethod
    def of(cls, gaps: Iterable[float] = (), ended: int = 0) -> "Pauses":
        return cls(tuple(sorted(float(g) for g in gaps if g >= 0 and math.isfinite(g))), max(0, int(ended)))

    def beyond(self, t: float) -> int:
        """Pauses longer than ``t`` seconds (a never-followed answer is longer than any)."""
        return len(self.returned) - bisect_right(self.returned, t) + self.ended


@dataclass(frozen=True)
class Quote:
    """What one pause of one conversation puts at stake (dollars)."""

    prefix_tokens: int  # P: cached up to the last marker
    ping_usd: float  # c: one ping
    rewrite_usd: float  # P x (w - r): the re-write a warm return avoids
    free_usd: float = 0.0  # F: what the cold break would have cut for free

    @property
    def avoided_usd(self) -> float:
        """A: what a return the pings kept warm saves."""
        return self.rewrite_usd - self.free_usd


def write_rate(rates: Any, ttl: str) -> float:
    return float(rates.write_1h if ttl == "1h" else rates.write_5m)


def quote(rates: Any, prefix_tokens: int, ttl: str, *, tail_tokens: int = 0, free_tokens: int = 0,
          later_turns: int = 0) -> Quote:
    """The pause's figures from the price table: ``prefix_tokens`` cached, ``tail_tokens`` after the last
    marker (billed as input by every ping), ``free_tokens`` the cold break would cut for free, read again
    on ``later_turns`` requests after the return."""
    p = max(0, int(prefix_tokens))
    r = rates.for_prompt(p + max(0, int(tail_tokens)))
    write, read = write_rate(r, ttl), float(r.cache_read)
    ping = r.cost(Usage(input_tokens=max(0, int(tail_tokens)), cache_read=p, output_tokens=1))
    free = max(0, int(free_tokens)) * (write + read * max(0, int(later_turns)))
    return Quote(p, ping, p * (write - read), free)


def ski_rental_bound(q: Quote) -> int:
    """The most pings one pause may cost: as many as one avoided re-write pays for."""
    if q.ping_usd <= 0 or q.avoided_usd <= 0:
        return 0
    return int(math.floor(q.avoided_usd / q.ping_usd + 1e-12))


def realized_saving(q: Quote, read_tokens: int) -> float:
    """What a warm return saved, from its usage: the tokens it read of the kept prefix at (w - r), less
    what the cold break would have let go free (never below zero: the pings are counted apart)."""
    if q.prefix_tokens <= 0:
        return 0.0
    kept = min(q.prefix_tokens, max(0, int(read_tokens)))
    return max(0.0, q.rewrite_usd * kept / q.prefix_tokens - q.free_usd)


@dataclass(frozen=True)
class KeepPlan:
    """The pings one pause may have: at ``at[k]`` seconds after the request was sent, while nobody came
    back, ``pings`` of them (each still subject to the budget when it is due)."""

    pings: int
    at: tuple[float, ...]
    step_s: float
    bound: int
    reason: str
    quote: Quote
    values: tuple[float, ...] = ()  # the best continuation's expected net saving at each ping (USD)

    def figures(self) -> dict[str, Any]:
        return {"pings_planned": self.pings, "ping_bound": self.bound, "step_s": round(self.step_s, 3),
                "prefix_tokens": self.quote.prefix_tokens, "ping_usd": round(self.quote.ping_usd, 6),
                "rewrite_usd": round(self.quote.rewrite_usd, 6), "free_usd": round(self.quote.free_usd, 6)}


def plan(q: Quote, pauses: Pauses, ttl_s: float, answer_s: float, lead_s: float, margin_s: float = 0.0,
         affordable: int | None = None) -> KeepPlan:
    """The pings worth sending for this pause (see the module docstring). ``answer_s``: from sending the
    request to its answer's end (a pause is counted from the end); ``lead_s``: how long before the TTL
    runs out a ping must go; ``margin_s``: how long past its TTL an entry may still answer (part of the
    lead: a return is counted as a ping's only past the cover it had without it, margin included);
    ``affordable``: how many pings the user's budget and the conversation's cap can stake now (None: no
    limit): the rule weighs only the pings it can fund (a pause pinged halfway, then refused, pays for
    pings that keep nothing)."""
    step = float(ttl_s) - max(0.0, float(lead_s))
    bound = ski_rental_bound(q)
    limit = bound if affordable is None else min(bound, max(0, int(affordable)))

    def none(reason: str) -> KeepPlan:
        return KeepPlan(0, (), max(0.0, step), bound, reason, q)

    if q.prefix_tokens <= 0:
        return none("nothing cached")
    if bound <= 0:
        return none("a ping costs more than the re-write it could avoid")
    if step <= TICK_S:
        return none("the TTL is shorter than the lead a ping needs")
    if limit <= 0:
        return none("the risk budget or the conversation's cap cannot stake a ping now")
    at = [k * step for k in range(1, limit + 2)]  # (one more: where the last ping's cover ends)
    gaps = [t - max(0.0, float(answer_s)) for t in at]
    if gaps[0] <= 0:
        return none("the answer outlasted the TTL")
    seen = pauses.beyond(gaps[0])
    if seen < MIN_PAUSES:
        return none(f"{seen} of your pauses reached {gaps[0]:.0f} s (at least {MIN_PAUSES} needed)")
    a, c, ttl, margin = q.avoided_usd, q.ping_usd, float(ttl_s), max(0.0, float(margin_s))
    # each ping's own term: A x (returns it alone keeps warm) - c x (pauses still going when it is due).
    # Without ping j the entry may live until its last use + TTL + margin: the answer's end for the first,
    # ping j-1 for the others; with it, surely until ping j + TTL (its use is no earlier than its sending).
    lows = [ttl + margin] + [gaps[j - 1] + ttl + margin for j in range(1, limit)]
    terms = [a * max(0, pauses.beyond(lows[j]) - pauses.beyond(gaps[j] + ttl)) - c * pauses.beyond(gaps[j])
             for j in range(limit)]
    values: list[float] = []
    for k in range(limit):
        alive = pauses.beyond(gaps[k])
        if alive <= 0:
            break
        best, run = -math.inf, 0.0
        for j in range(k, limit):
            run += terms[j]
            best = max(best, run)
        if best <= 0:
            break
        values.append(best / alive)
    n = len(values)
    reason = (f"{n} ping{'s' if n != 1 else ''} while a return repays them (of {bound} at most, {limit} funded)" if n
              else "your pauses this long rarely end in a return soon enough to repay a ping")
    return KeepPlan(n, tuple(at[:n]), step, bound, reason, q, tuple(values))
