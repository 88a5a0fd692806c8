"""The surgery policies, one small object each, in one table (the ``policy`` setting).

* ``off``: never cuts (logged cuts are still replayed: a cut once sent stays);
* ``cold``: cuts only at or after the natural break, where the
  cache is cold anyway, and only a batch worth ``batch_min_tokens``;
* ``death`` (the default, ``config.py``): ``cold``, plus a result that died in this very request is cut on a
  warm cache when its saving over the remaining turns repays the (pinned) tail
  it forces ``payback_factor`` times and the user's risk budget covers it within the conversation's cap
  (``surgery/payback.py``, ``only_new``);
* ``payback``: ``cold``, plus any dead result before the break on the same rule.

The warm ones need each message's size, and always look for dead results (a
warm cut may be worth it).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from scalpel_desktop.surgery.payback import payback_plan
from scalpel_desktop.surgery.plan import Break, Candidate, ConversationState, Plan, RequestShape
from scalpel_desktop.surgery.remaining import History


class Policy:
    name = ""
    cuts = True  # False: never cuts
    warm = False  # True: also cuts before the break (needs unit sizes; no fast path)

    def looks_for_dead(self, results_from_break: int, keep_recent: int) -> bool:
        """Is a search for dead results worth it? Not when nothing at or after the break
        could be cut (every result there is among the ``keep_recent`` protected ones)."""
        return self.cuts and (self.warm or results_from_break > keep_recent)

    def warm_plan(self, shape: RequestShape, brk: Break, candidates: Sequence[Candidate], free: list[Candidate],
                  batch_min: int, conv: ConversationState | None, settings: Any,
                  rates_of: Callable[[str], Any], history: History | None = None,
                  budget: Any = None) -> Plan | None:
        """A cut before the break worth its rewrite, or None (the cold rule decides)."""
        return None


class Off(Policy):
    name = "off"
    cuts = False


class Cold(Policy):
    name = "cold"


class Payback(Policy):
    name = "payback"
    warm = True
    only_new = False

    def warm_plan(self, shape: RequestShape, brk: Break, candidates: Sequence[Candidate], free: list[Candidate],
                  batch_min: int, conv: ConversationState | None, settings: Any,
                  rates_of: Callable[[str], Any], history: History | None = None,
                  budget: Any = None) -> Plan | None:
        return payback_plan(shape, brk, candidates, free, batch_min, conv, settings, rates_of, history,
                            only_new=self.only_new, budget=budget)


class Death(Payback):
    name = "death"
    only_new = True


POLICIES: dict[str, Policy] = {p.name: p for p in (Cold(), Death(), Payback(), Off())}


def policy_named(name: str) -> Policy:
    """The policy called ``name``; an unknown name is ``cold`` (the one that never cuts on a warm cache)."""
    return POLICIES.get(str(name), POLICIES["cold"])
