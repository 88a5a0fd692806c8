"""Comparison policies that exist only in the bench, and the ceiling.

* ``naive``: "clear everything stale": every dead result (by the tier's doom
  rules) is stubbed in the first request that shows it dead, whatever the
  cache state: what a pruner without an economist does.
* ``first-party``: the provider's server-side context editing
  (``clear_tool_uses_20250919`` defaults): whenever a request's input passes
  100k tokens, every tool result but the 3 most recent is cleared, per
  request, as the server does it: each clearing breaks the cache from the
  first newly cleared result on.
* ``ceiling``: every dead token removed for free the moment it died (the
  stub's size is billed, the cache is never touched): no policy can beat it.

Each is a ``cuts_for(k, request) -> {tool_use_id: Stub}`` for an arm of
``SequenceSimulator``; stubs are sized with the sequence's own tokens per byte.
"""

from __future__ import annotations

from typing import Any

from scalpel_desktop.bench.reader import Request, Sequence
from scalpel_desktop.bench.simulate import Stub

FIRST_PARTY_TRIGGER = 100_000
FIRST_PARTY_KEEP = 3
CLEARED_TEXT = "[cleared to save context]"


def doom_spans(seq: Sequence, req: Request, config: Any, tier: int) -> list:
    """The doom spans of one request's history (``scalpel profile``; the replay shares its own)."""
    from scalpel_desktop.surgery.doom import find_doom_spans
    from scalpel_desktop.wire.formats import view_for

    view = view_for("messages", {"model": req.model, "messages": req.messages})
    return find_doom_spans(view, config, tier=tier) if view is not None else []


class DoomCuts:
    """Cut every dead result as soon as it is dead: ``naive`` (keyed stubs) or ``ceiling`` (free).

    ``spans(k)`` gives request k's doom spans (``SequenceBodies.spans``: shared with the stage arms)."""

    def __init__(self, spans, stub: int, label: str):
        self.spans = spans
        self.label = label
        self.cuts: dict[str, Stub] = {}
        self.tokens = stub

    def __call__(self, k: int, req: Request) -> dict[str, Stub]:
        for span in self.spans(k):
            if span.tool_use_id not in self.cuts:
                self.cuts[span.tool_use_id] = Stub(f"{self.label}:{span.tool_use_id}", self.tokens)
        return self.cuts


class FirstPartyCuts:
    """Server-side clearing of the oldest tool results past a trigger (per request).

    ``prompt(k)``: request k's real prompt total (the server decides on what it counts)."""

    def __init__(self, seq: Sequence, prompt, stub: int, trigger: int = FIRST_PARTY_TRIGGER,
                 keep: int = FIRST_PARTY_KEEP):
        self.seq = seq
        self.prompt = prompt
        self.trigger = trigger
        self.keep = keep
        self.tokens = stub

    def __call__(self, k: int, req: Request) -> dict[str, Stub]:
        if self.prompt(k) <= self.trigger:
            return {}
        ids = [b.get("tool_use_id") for ln in req.history for b in ln.blocks if b.get("type") == "tool_result"]
        ids = [i for i in ids if isinstance(i, str)]
        old = ids[: max(0, len(ids) - self.keep)]
        return {i: Stub("cleared", self.tokens) for i in old}
