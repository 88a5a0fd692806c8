"""The decision the ledger records for a surgery stage's request: one builder for every path.

The full path, the fast path, a first sighting analysed after its answer and a
dropped conversation's turn (``surgery/ghost_turn.py``) all end here, so the
same plan is always labelled and counted the same way.
"""

from __future__ import annotations

from typing import Any

from scalpel_desktop.exchange import Exchange
from scalpel_desktop.surgery.plan import Plan


def record_decision(ex: Exchange, plan: Plan, *, replayed: int, cuts: list, removed: int,
                    extra: dict[str, Any] | None = None) -> None:
    """The decision for the ledger, from the economist's plan.

    Adds this stage's changes (``replayed``, ``cut``) to what earlier stages recorded
    (the tool filter's ``filtered``): the decision names every change the bytes show."""
    d = ex.decision
    d.figures.update(plan.figures)
    d.figures.update({"replayed": replayed, "new_cuts": len(cuts)})
    if extra:
        d.figures.update(extra)
    reason = plan.reason
    if cuts:
        d.figures["tokens_cut"] = sum(c.saved_tokens for c in cuts)
        d.figures["rewrite_tokens"] = plan.rewrite_tokens
    elif plan.cut_ids:
        reason = f"surgeon could not cut; {reason}"
    if replayed:
        d.add("replayed", f"replayed {replayed} earlier cuts")
    if cuts:
        d.add("cut", reason)
    else:
        d.note(reason)
    d.tokens_removed += removed
