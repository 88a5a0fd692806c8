"""The surgery policies, one small object each, in one table (the ``policy`` setting).

* ``off``: never cuts (logged cuts are still replayed: a cut once sent stays);
* ``cold`` (default): cuts only at or after the natural break, where the
  cache is cold anyway, and only a batch worth ``batch_min_tokens``;
* ``payback``: also cuts before the break when the saving repays the rewrite
  ``payback_factor`` times (``surgery/payback.py``); it needs each message's
  size, and always looks for dead results (a warm cut may be worth it).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from scalpel_desktop.surgery.payback import payback_plan
from scalpel_desktop.surgery.plan import Break, Candidate, ConversationState, Plan, RequestShape


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
                  rates_of: Callable[[str], Any]) -> Plan | None:
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

    def warm_plan(self, shape: RequestShape, brk: Break, candidates: Sequence[Candidate], free: list[Candidate],
                  batch_min: int, conv: ConversationState | None, settings: Any,
                  rates_of: Callable[[str], Any]) -> Plan | None:
        return payback_plan(shape, brk, candidates, free, batch_min, conv, settings, rates_of)


POLICIES: dict[str, Policy] = {p.name: p for p in (Cold(), Payback(), Off())}


def policy_named(name: str) -> Policy:
    """The policy called ``name``; an unknown name is ``cold`` (the default)."""
    return POLICIES.get(str(name), POLICIES["cold"])
