"""The user's risk budget: the warm policies' bets are paid from what scalpel already saved this user.

A warm cut (``surgery/payback.py``) re-writes a tail of the cache now to save
its tokens on every later request. If the conversation ends, or is compacted,
right after, the re-write is lost. So a bet is made only when:

* **the user's budget covers it**: what every cut has surely saved so far
  (each stub a request carried, at the rate its position was billed at,
  ``realized.banked_credit``), across every conversation and every restart
  (the ledger's ``banked_usd`` column), minus what every bet staked (each warm
  cut's priced extra, the ``staked_usd`` column). A fresh install has an empty
  budget: only free cuts happen until they have saved something. Across the
  ledger, scalpel never costs more than it saved;
* **no one conversation goes past the cap**: a conversation's own bets, less
  what its own cuts surely saved, may not exceed ``risk_cap_pct`` percent of
  what the conversation has cost so far (its usage counts at the price
  table). The cap is a promise, not a fitted constant: whatever happens next,
  no conversation ends more than that share dearer than without scalpel (a
  conversation the proxy first saw after a restart starts at zero cost, so it
  is held to its own savings until it has cost something).

Pure arithmetic on numbers the stage hands in; the ledger is read once at
start (``store/ledger_queries.risk_budget``).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field


@dataclass
class RiskBudget:
    """What the user's cuts surely saved and what the bets staked (dollars), shared by every
    conversation of one proxy (or one bench arm)."""

    saved_usd: float = 0.0
    staked_usd: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    @property
    def balance_usd(self) -> float:
        return self.saved_usd - self.staked_usd

    def bank(self, usd: float) -> None:
        if usd:
            with self._lock:
                self.saved_usd += usd

    def stake(self, usd: float) -> None:
        if usd:
            with self._lock:
                self.staked_usd += usd


def conversation_room(staked_usd: float, banked_usd: float, cost_usd: float, cap_pct: float) -> float:
    """How much more one conversation may stake: its cap (``cap_pct`` of its cost so far) plus its
    own sure savings, less what it already staked."""
    return max(0.0, cap_pct) / 100.0 * max(0.0, cost_usd) + banked_usd - staked_usd


def refusal(budget: RiskBudget | None, extra_usd: float, staked_usd: float, banked_usd: float,
            cost_usd: float, cap_pct: float) -> str | None:
    """Why a bet of ``extra_usd`` may not be made (None: it may). A bet that gains now
    (``extra_usd <= 0``) risks nothing."""
    if extra_usd <= 0:
        return None
    if budget is None or extra_usd > budget.balance_usd:
        have = budget.balance_usd if budget is not None else 0.0
        return f"budget: ${extra_usd:.4f} asked, ${have:.4f} saved and not staked"
    room = conversation_room(staked_usd, banked_usd, cost_usd, cap_pct)
    if extra_usd > room:
        return f"cap: ${extra_usd:.4f} asked, ${room:.4f} left under {cap_pct:g}% of this conversation"
    return None
