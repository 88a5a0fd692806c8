"""The decision vocabulary: what a ledger row's ``decision`` says the pipeline did to the bytes.

A request's decision names every change its bytes show, in this order, joined
by ``+`` (``cut+replayed+filtered``):

* ``cut``      - new cuts: tool output stubbed for the first time in this request;
* ``replayed`` - stubs of earlier cuts re-applied (byte-identical to last time);
* ``filtered`` - tool declarations (or skill listings) the tool filter did not send.

When no change was made the bytes sent equal the bytes received, and the
decision says why nothing changed:

* ``unchanged`` - nothing to change (or nothing allowed: the reason says which);
* ``paused``    - scalpel is paused: pass-through;
* ``error``     - a stage failed: the original bytes went out (fail open).

So ``sent != received`` exactly when ``is_change(decision)``. At the bottom of
the house: imports nothing, so the ledger reader, the hooks and the statusline
can use it under their start-up budgets.
"""

from __future__ import annotations

CHANGES = ("cut", "replayed", "filtered")
PASS_THROUGH = ("unchanged", "paused", "error")
UNCHANGED = "unchanged"


def label(changes) -> str:
    """``cut+filtered`` for {"filtered", "cut"}; ``unchanged`` for nothing."""
    got = [c for c in CHANGES if c in changes]
    return "+".join(got) if got else UNCHANGED


def changes_of(decision: str | None) -> frozenset[str]:
    """The changes a stored decision names (empty for a pass-through one)."""
    if not decision:
        return frozenset()
    return frozenset(p for p in decision.split("+") if p in CHANGES)


def is_change(decision: str | None) -> bool:
    """Did the pipeline change the bytes of a request with this decision?"""
    return bool(changes_of(decision))
