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

Each is a ``cuts_for(k, request) -> {tool_use_id: Stub}`` for
``SequenceSimulator.run``.
"""

from __future__ import annotations

from typing import Any

from scalpel_desktop.accounting.estimator import estimate, model_family
from scalpel_desktop.bench.reader import Request, Sequence
from scalpel_desktop.bench.simulate import Stub

FIRST_PARTY_TRIGGER = 100_000
FIRST_PARTY_KEEP = 3
CLEARED_TEXT = "[cleared to save context]"


def stub_tokens(family: str | None = None) -> int:
    """Estimated tokens of a scalpel stub (its text is fixed but for the size and hash)."""
    from scalpel_desktop.surgery.stub import stub_text

    return estimate(stub_text("superseded_read", 12345, "0" * 64), family=family)


def doc_for(seq: Sequence, req: Request) -> dict:
    """An Anthropic body for the doom analysis (no system, no tools: transcripts lack them)."""
    return {"model": req.model, "messages": req.messages}


def doom_spans(seq: Sequence, req: Request, config: Any, tier: int) -> list:
    from scalpel_desktop.surgery.doom import find_doom_spans
    from scalpel_desktop.wire.formats import view_for

    view = view_for("messages", doc_for(seq, req))
    if view is None:
        return []
    return find_doom_spans(view, config, tier=tier)


class DoomCuts:
    """Cut every dead result as soon as it is dead: ``naive`` (keyed stubs) or ``ceiling`` (free)."""

    def __init__(self, seq: Sequence, config: Any, tier: int, label: str, spans_cache: dict | None = None):
        self.seq = seq
        self.spans_cache = spans_cache if spans_cache is not None else {}
        self.config = config
        self.tier = tier
        self.label = label
        self.cuts: dict[str, Stub] = {}
        self.tokens = stub_tokens(model_family(seq.requests[0].model))
        self.dead_tokens_by_kind: dict[str, int] = {}

    def __call__(self, k: int, req: Request) -> dict[str, Stub]:
        spans = self.spans_cache.get(k)
        if spans is None:
            spans = self.spans_cache[k] = doom_spans(self.seq, req, self.config, self.tier)
        for span in spans:
            if span.tool_use_id not in self.cuts:
                self.cuts[span.tool_use_id] = Stub(f"{self.label}:{span.tool_use_id}", self.tokens)
                self.dead_tokens_by_kind[span.kind] = self.dead_tokens_by_kind.get(span.kind, 0) + span.tokens
        return self.cuts


class FirstPartyCuts:
    """Server-side clearing of the oldest tool results past a trigger (per request)."""

    def __init__(self, seq: Sequence, estimate_prompt, trigger: int = FIRST_PARTY_TRIGGER,
                 keep: int = FIRST_PARTY_KEEP):
        self.seq = seq
        self.estimate_prompt = estimate_prompt  # (k) -> estimated prompt tokens of the original request
        self.trigger = trigger
        self.keep = keep
        self.tokens = estimate(CLEARED_TEXT, family=model_family(seq.requests[0].model))

    def __call__(self, k: int, req: Request) -> dict[str, Stub]:
        if self.estimate_prompt(k) <= self.trigger:
            return {}
        ids = [b.get("tool_use_id") for ln in req.history for b in ln.blocks if b.get("type") == "tool_result"]
        ids = [i for i in ids if isinstance(i, str)]
        old = ids[: max(0, len(ids) - self.keep)]
        return {i: Stub("cleared", self.tokens) for i in old}
