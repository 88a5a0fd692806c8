"""What the cache keeper reads from the economist and tells it back: one pause, priced and kept.

The keeper's rule (``surgery/keeper.py``) takes plain numbers; the proxy's
keeper (``proxy/keeper.py``) and the bench's keeper arm (``bench/keepalive.py``)
both get them here from the same economist state, so they make the same
decisions:

* ``pause_plan``: the conversation's last request as the economist holds it
  (its TTL, when it was sent), its usage (what is cached up to the last marker:
  read plus written; the uncached tail), the dead tokens its decision left in
  the prompt (``dead_tokens`` less ``tokens_cut``: what a cold break would cut
  for free, when they make a batch), the median of the requests the
  conversation still gets (``remaining.session_turns`` at q = 1/2, at most
  ``payback_turns_max``), the learned TTL margin, the user's pauses, and how
  many pings the budget and the cap can fund now (``affordable``);
* ``ping_refusal``: the user's risk budget and the conversation's cap
  (``surgery/budget.py``) asked for one ping's worst case (its cost: nobody
  comes back);
* ``record_ping``: a ping went out and was answered: its cost is staked (a
  realized loss, whatever happens next), and when it read (or wrote) the whole
  prefix the conversation's cache counts from the ping on: its model state's
  answer end and its own entry mark (read exactly there, so refreshed under
  every reading) move to the ping. Without this the economist would call the
  cache expired at the person's return and make a "free" cut that re-writes
  everything the pings kept;
* ``would_have_expired`` and ``bank_return``: the person came back past the
  TTL the economist counts from the original answer, and the read shows the
  kept prefix: the re-write avoided (``keeper.realized_saving``) is banked.

Pure: the caller holds the surgery stage's lock while it calls these (the
economist is shared with the request path).
"""

from __future__ import annotations

import math
from typing import Any, Hashable

from scalpel_desktop.surgery.budget import conversation_room, refusal
from scalpel_desktop.surgery.keeper import TICK_S, KeepPlan, Pauses, plan, quote
from scalpel_desktop.surgery.plan import ModelState
from scalpel_desktop.surgery.remaining import session_turns
from scalpel_desktop.wire.cache_rules import TTL_SECONDS
from scalpel_desktop.wire.usage import Usage


def latest_state(economist: Any, key: Hashable, model: str) -> ModelState | None:
    conv = economist.conversations.get(key)
    states = conv.models.get(model, []) if conv is not None else []
    return max(states, key=lambda s: s.request_serial, default=None)


def ttl_name(ttl_s: float) -> str:
    return "1h" if ttl_s >= TTL_SECONDS["1h"] else "5m"


def free_tokens(economist: Any, figures: dict | None) -> int:
    """The dead tokens a decision left in the prompt, when they make a batch a cold break would cut."""
    fig = figures or {}
    left = int(fig.get("dead_tokens") or 0) - int(fig.get("tokens_cut") or 0)
    return left if left >= int(economist.settings["batch_min_tokens"]) and left > 0 else 0


def later_turns(economist: Any, key: Hashable) -> int:
    """The median of the requests this conversation still gets (from the user's history), capped."""
    conv = economist.conversations.get(key)
    turns, _src = session_turns(economist.history, conv.turns if conv is not None else 1, 0.5)
    return min(int(turns), int(economist.settings["payback_turns_max"]))


def pause_plan(economist: Any, key: Hashable, model: str, usage: Usage, figures: dict | None, *,
               sent_at: float, ended_at: float, first_byte_s: float, pauses: Pauses) -> KeepPlan:
    """The pings this conversation's pause may have (``keeper.plan``), from the economist's state."""
    state = latest_state(economist, key, model)
    ttl_s = state.ttl_s if state is not None else TTL_SECONDS["5m"]
    q = quote(economist._rates(model), usage.cache_read + usage.cache_write, ttl_name(ttl_s),
              tail_tokens=usage.input_tokens, free_tokens=free_tokens(economist, figures),
              later_turns=later_turns(economist, key))
    margin = economist.ttl_margin()
    lead = margin + TICK_S + max(0.0, float(first_byte_s))
    return plan(q, pauses, ttl_s, max(0.0, ended_at - sent_at), lead, margin, affordable(economist, key, q.ping_usd))


def affordable(economist: Any, key: Hashable, ping_usd: float) -> int:
    """How many pings of ``ping_usd`` the user's budget and the conversation's cap could stake now."""
    conv = economist.conversations.get(key)
    if conv is None or ping_usd <= 0:
        return 0
    room = min(economist.budget.balance_usd, conversation_room(conv.staked_usd, conv.banked_usd, conv.cost_usd,
                                                               float(economist.settings["risk_cap_pct"])))
    return max(0, int(math.floor(room / ping_usd + 1e-9)))


def ping_refusal(economist: Any, key: Hashable, usd: float) -> str | None:
    """Why a ping costing ``usd`` may not be sent (None: it may): the user's budget, the conversation's cap."""
    conv = economist.conversations.get(key)
    if conv is None:
        return "the conversation is not known"
    return refusal(economist.budget, usd, conv.staked_usd, conv.banked_usd, conv.cost_usd,
                   float(economist.settings["risk_cap_pct"]))


def stake(economist: Any, key: Hashable, usd: float) -> None:
    """``usd`` (positive: staked; negative: a stake given back) on the conversation and the user's budget."""
    conv = economist.conversations.get(key)
    if conv is not None and usd:
        conv.staked_usd += usd
        economist.budget.stake(usd)


def record_ping(economist: Any, key: Hashable, model: str, serial: int, sent_at: float, ended_at: float,
                usage: Usage | None, prefix_tokens: int) -> bool:
    """A ping of request ``serial`` was answered (``usage``: None when it failed). Its cost is the caller's
    to stake. True when it kept the prefix cached (it read or wrote all of it): that request's cache then
    counts from the ping (never a later request's: one sent meanwhile is its own)."""
    if usage is None or usage.cache_read + usage.cache_write < prefix_tokens or prefix_tokens <= 0:
        return False
    conv = economist.conversations.get(key)
    state = next((s for s in (conv.models.get(model, []) if conv is not None else [])
                  if s.request_serial == serial), None)
    if state is None or state.ended_at is None:
        return False
    state.ended_at = max(state.ended_at, ended_at)
    state.sent_at = max(state.sent_at, sent_at)
    state.cached_tokens = usage.cache_read
    for mark in conv.entries.get(model, ()):
        if mark.serial == state.request_serial and mark.cached == prefix_tokens:
            mark.at = max(mark.at, sent_at)  # the ping's read stopped there: refreshed under every reading
    return True


def would_have_expired(economist: Any, ttl_s: float, ended_at: float, at: float) -> bool:
    """Past the TTL the economist counts from the original answer's end (its margin included)?"""
    return at > ended_at + ttl_s + economist.ttl_margin()


def bank_return(economist: Any, key: Hashable, usd: float) -> None:
    conv = economist.conversations.get(key)
    if usd > 0:
        if conv is not None:
            conv.banked_usd += usd
        economist.budget.bank(usd)
