"""Bench-only: what keeping the cache alive while Claude Code waits for a person would have cost.

In real sessions most pauses longer than 4.5 minutes follow an answer that
waits for a person (AskUserQuestion, plan-mode approval, a permission prompt
for Edit or Bash, a running subagent): the response ended in a ``tool_use``
whose result has not come yet. A keep-alive sends, ``ttl - ttl_margin_s``
after such an answer (about 270 s for the 5-minute TTL) when no request
followed, the same prefix with the same settings (a one-token answer): it
reads the entry and refreshes it. At most ``N`` pings per pause, where ``N``
comes from the price table and the payback factor: each ping costs the prompt
at the read rate, the person coming back saves the prompt at the write rate
minus the read rate, so ``N = floor((write - read) / (factor x read))`` pings
are repaid ``factor`` times by one return. Pings after the last request of a
sequence are charged in full (a transcript does not show when the session
ended; the live hook ``SessionEnd`` would stop them): the worst case.

Arms (``ARMS``):

* ``keepalive``: every session at its own TTL, plus the pings;
* ``as-5m``: 1-hour sessions sent with the 5-minute TTL, no pings (what the
  cheaper write alone does; a 5-minute session is unchanged);
* ``as-5m+keepalive``: 1-hour sessions sent as 5-minute plus the pings.

Where a ping kept an entry alive across a pause whose real read fell back to
the static prefix (the TTL expired), the next request's read is left to the
cache model instead of the usage (the pause broke nothing any more); an
``as-5m`` arm does not get the reads the usage shows across pauses past 5
minutes (those were the 1-hour TTL's doing).
"""

from __future__ import annotations

import math

from scalpel_desktop.accounting.cache_model import TTL_SECONDS, min_cacheable_for
from scalpel_desktop.bench.arm import Arm
from scalpel_desktop.bench.reader import Request
from scalpel_desktop.wire.usage import Usage

ARMS = ("keepalive", "as-5m", "as-5m+keepalive")


def waits_for_person(req: Request) -> bool:
    """Did this request's answer end in a tool call (a question, a plan, a permission, a subagent)?"""
    for ln in reversed(req.response):
        for b in reversed(ln.blocks):
            if isinstance(b, dict) and b.get("type") in ("text", "tool_use"):
                return b.get("type") == "tool_use"
    return False


def ping_limit(rates, ttl: str, factor: float) -> int:
    """Pings per pause that one return repays ``factor`` times (see the module docstring)."""
    write = float(rates.write_1h if ttl == "1h" else rates.write_5m)
    read = float(rates.cache_read)
    if read <= 0:
        return 0
    return max(0, int(math.floor((write - read) / (max(1.0, factor) * read))))


class KeepAliveArm(Arm):
    def __init__(self, sim, cuts_for, free, after, *, as_5m: bool = False, pings: bool = True,
                 margin: float = 30.0, factor: float = 2.0):
        super().__init__(sim, cuts_for, free, after)
        self.as_5m, self.pings, self.margin, self.factor = as_5m, pings, margin, factor
        self.kept_until = -1.0  # the last ping's time (-1: the pause before this request had none)
        self.pings_sent = 0
        self.real_ttl = self.ttl

    def ttl_for(self, req: Request) -> str:
        self.real_ttl = self.sim._ttl(req, self.real_ttl)
        return "5m" if self.as_5m else self.real_ttl

    def before(self, k: int, req: Request) -> None:
        self.kept_until = -1.0
        if k > 0 and self.pings:
            self._ping(k - 1, req.ts)

    def finish(self) -> None:
        """After the last request: pings as long as the answer waits (charged: the worst case)."""
        last = len(self.sim.seq.requests) - 1
        if self.pings and last >= 0:
            self._ping(last, math.inf)

    def _ping(self, k: int, until: float) -> None:
        prev = self.sim.seq.requests[k]
        if not waits_for_person(prev) or not self.units.keys:
            return
        ttl = self.ttl
        rates = self.sim.prices.rates(prev.model)
        n = ping_limit(rates, ttl, self.factor)
        every = TTL_SECONDS[ttl] - self.margin
        # the entry was written when the request was processed: count from its start, not its end
        t = max(prev.ts + every, prev.ts_done + 1.0)
        blocks = self.units.pb.blocks
        marks = self.sim._marks(self.roles, ttl)
        sent = 0
        while sent < n and t < until:
            detail = self.cache.bill_detail(prev.model, blocks, t, breakpoints=marks,
                                            min_cacheable=min_cacheable_for(prev.model))
            self.billed(prev.model, detail.total_tokens)
            usage = Usage(input_tokens=max(0, detail.usage.input_tokens), cache_write_5m=detail.usage.cache_write_5m,
                          cache_write_1h=detail.usage.cache_write_1h, cache_read=detail.usage.cache_read,
                          output_tokens=1)
            self.bill.extra_cost += rates.cost(usage)
            self.bill.extra_requests += 1
            self.kept_until = t
            sent += 1
            t += every
        self.pings_sent += sent

    def follows_usage(self, k: int, req: Request) -> bool:
        if k == 0:
            return True
        prev = self.sim.seq.requests[k - 1]
        gap = req.ts - prev.ts_done
        prefix_units = len(self.sim._prefix_units[0])
        expired_in_reality = gap > TTL_SECONDS[self.real_ttl] and self.sim.read_at[k] <= prefix_units
        if self.kept_until >= 0 and req.ts < self.kept_until + TTL_SECONDS[self.ttl] and expired_in_reality:
            return False  # a ping kept the entry alive: the pause broke nothing
        if self.as_5m and gap > TTL_SECONDS["5m"] and self.sim.read_at[k] > prefix_units:
            return False  # the real read across this pause was the 1-hour TTL's: the cache model decides
        return True
