"""Bench: the shipped cache keeper, replayed on a transcript's pauses; and one TTL choice.

Arms (``ARMS``):

* ``keepalive``: the product as it ships with ``keepalive`` on: the default
  policy's surgery stage (``bench/stage_driver.py``) plus the keeper's
  decisions, from the same code the proxy runs (``surgery/keeper.py``, through
  ``surgery/keeper_link.py`` on the stage's own economist): after each answer
  of a main sequence (a subagent waits for no person), the pings its rule
  allows for the user's pauses as the ledger would have held them when the
  sequence started (``pauses_before``: the main sequences that ended before
  it, their pauses and one answer nobody came back to each), each staked from
  the arm's risk budget under the conversation's cap before it is sent, at
  ``sent + k x (TTL - lead)``, sent while the transcript shows no next request
  yet (the pause it shows is the person's). A ping is billed by the arm's own
  cache model on the prefix that request sent (its cuts and pin included),
  and tells the economist the cache lives on (so the return is no "free" cut
  that re-writes what the pings kept). A return past the TTL the pings kept
  banks the re-write avoided, as live. After a sequence's last answer the pings
  go on as long as the rule and the budget allow: nobody came back (the worst
  case; live, ``SessionEnd`` would stop them). The time to first byte, which
  the proxy adds to the lead, is not in a transcript: 0 here.
* ``as-5m``: 1-hour sessions sent with the 5-minute TTL, no pings (what the
  cheaper write alone does; a 5-minute session is unchanged).

Where a ping kept an entry alive across a pause whose real read fell back to
the static prefix (the TTL expired), the next request's read is left to the
cache model instead of the usage (the pause broke nothing any more); the
``as-5m`` arm does not get the reads the usage shows across pauses past 5
minutes (those were the 1-hour TTL's doing).
"""

from __future__ import annotations

import math
from typing import Any

from scalpel_desktop.accounting.cache_model import TTL_SECONDS, min_cacheable_for
from scalpel_desktop.bench.arm import Arm
from scalpel_desktop.bench.reader import Request, Sequence
from scalpel_desktop.surgery import keeper_link as link
from scalpel_desktop.surgery.keeper import Pauses, realized_saving
from scalpel_desktop.wire.usage import Usage

ARMS = ("keepalive", "as-5m")
KEEPER_POLICY = "death"  # the default policy (config.KEYS["policy"]): the stage the keeper ships beside


def waits_for_person(req: Request) -> bool:
    """Did this request's answer end in a tool call (a question, a plan, a permission, a subagent)?"""
    for ln in reversed(req.response):
        for b in reversed(ln.blocks):
            if isinstance(b, dict) and b.get("type") in ("text", "tool_use"):
                return b.get("type") == "tool_use"
    return False


def pauses_before(seqs: list[Sequence], seq: Sequence, facts: list) -> Pauses:
    """The user's pauses as the ledger would have held them when ``seq`` started
    (``store/keeper_ledger.pause_history``): the main sequences that ended before, their gaps, and one
    answer never followed each. ``facts``: ``ledger_view.ledger_facts(seqs)``."""
    start = seq.requests[0].ts
    gaps: list[float] = []
    ended = 0
    for other, f in zip(seqs, facts):
        if other is seq or f is None or f[0] >= start or other.kind != "main":
            continue
        gaps.extend(f[2])
        ended += 1
    return Pauses.of(gaps, ended)


class KeepAliveArm(Arm):
    """An arm that may ask another TTL (``as_5m``) or keep the cache with the shipped keeper (``driver``:
    the stage the keeper reads and tells, its cuts this arm's)."""

    def __init__(self, sim, cuts_for, free, after, *, as_5m: bool = False, driver: Any = None,
                 pauses: Pauses | None = None):
        super().__init__(sim, cuts_for, free, after)
        self.as_5m, self.driver, self.pauses = as_5m, driver, pauses or Pauses()
        self.kept_until = -1.0  # the last ping's time (-1: the pause before this request had none)
        self.pings_sent = 0
        self.kept = 0  # returns the pings kept warm past the TTL
        self.saved_usd = 0.0  # ... and what they banked
        self.real_ttl = self.ttl
        self._figures: dict[int, dict] = {}  # request -> its decision's figures (the dead tokens left)
        self._pause: tuple | None = None  # (plan, pings, answer end, TTL s, last use) before the request billed
        if driver is not None:
            self.cuts_for, self.after, self.pins_for = self._cuts, self._after, driver.pins_for

    def ttl_for(self, req: Request) -> str:
        self.real_ttl = self.sim._ttl(req, self.real_ttl)
        return "5m" if self.as_5m else self.real_ttl

    def _cuts(self, k: int, req: Request):
        cuts = self.driver.cuts_for(k, req)
        ex = self.driver._ex
        self._figures = {k: dict(ex.decision.figures)} if ex is not None else {}
        return cuts

    def _after(self, k: int, req: Request, usage: Usage) -> None:
        self.driver.after(k, req, usage)
        pause, self._pause = self._pause, None
        if pause is None or not pause[1]:
            return
        plan, _n, ended, ttl_s, last_use = pause
        eco = self.driver.stage.economist
        if not link.would_have_expired(eco, ttl_s, ended, req.ts) or req.ts > last_use + ttl_s:
            return
        if usage.cache_read < plan.quote.prefix_tokens - min_cacheable_for(req.model):
            return
        saved = realized_saving(plan.quote, usage.cache_read)
        if saved > 0:
            link.bank_return(eco, _key(self.driver), saved)
            self.kept += 1
            self.saved_usd += saved

    def before(self, k: int, req: Request) -> None:
        self.kept_until = -1.0
        if k > 0 and self.driver is not None:
            self._pings(k - 1, req.ts)

    def finish(self) -> None:
        """After the last request: pings as long as the rule and the budget allow (nobody came back)."""
        last = len(self.sim.seq.requests) - 1
        if self.driver is not None and last >= 0 and self.bill.requests:
            self._pings(last, math.inf)

    def _pings(self, j: int, until: float) -> None:
        """The keeper's pings in the pause after request ``j``, before ``until`` (the next request)."""
        seq, d = self.sim.seq, self.driver
        if seq.kind != "main" or d._key is None or not self.units.keys or j >= len(self.bill.requests):
            return
        prev = seq.requests[j]
        eco, key, model = d.stage.economist, _key(d), prev.model
        state = link.latest_state(eco, key, model)
        if state is None or state.ended_at is None:
            return
        used = self.bill.requests[j].sim
        plan = link.pause_plan(eco, key, model, used, self._figures.get(j), sent_at=prev.ts,
                               ended_at=prev.ts_done, first_byte_s=0.0, pauses=self.pauses)
        rates = self.sim.prices.rates(model)
        ttl = self.ttl
        marks = {**self.sim._marks(self.roles, ttl), **(d.pins_for(j) or {})}
        blocks = self.units.pb.blocks
        last_use, sent = prev.ts, 0
        while sent < plan.pings:
            t = last_use + plan.step_s
            if t >= until:
                break
            est = plan.quote.ping_usd
            if link.ping_refusal(eco, key, est) is not None:
                break
            detail = self.cache.bill_detail(model, blocks, t, breakpoints=marks, min_cacheable=min_cacheable_for(model))
            self.billed(model, detail.total_tokens)
            usage = Usage(input_tokens=max(0, detail.usage.input_tokens), cache_write_5m=detail.usage.cache_write_5m,
                          cache_write_1h=detail.usage.cache_write_1h, cache_read=detail.usage.cache_read,
                          output_tokens=1)
            cost = rates.cost(usage)
            link.stake(eco, key, cost)
            self.bill.extra_cost += cost
            self.bill.extra_requests += 1
            sent += 1
            self.kept_until = t
            if not link.record_ping(eco, key, model, state.request_serial, t, t, usage, plan.quote.prefix_tokens):
                break
            last_use = t
        self.pings_sent += sent
        self._pause = (plan, sent, prev.ts_done, state.ttl_s, last_use)

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


def _key(driver: Any) -> tuple[str, str]:
    """The conversation as the economist keys it (``surgery/stage.py``: session id, agent id)."""
    k = driver._key
    return (k.session_id, k.agent_id)


def build(name: str, seq: Sequence, sim, bodies, prices, cfg: dict, tier: int, scratch: str | None,
          history: Any, budget: Any, pauses: Pauses | None) -> tuple[Arm, Any]:
    """The arm called ``name`` (``ARMS``) and the stage driver it runs (None for ``as-5m``)."""
    if name == "as-5m":
        return sim.arm(kind=KeepAliveArm, as_5m=True), None
    from scalpel_desktop.bench.stage_driver import StageDriver

    driver = StageDriver(seq, KEEPER_POLICY, tier, prices, cfg, sim, bodies, scratch=scratch, history=history,
                         budget=budget)
    return sim.arm(kind=KeepAliveArm, driver=driver, pauses=pauses), driver
