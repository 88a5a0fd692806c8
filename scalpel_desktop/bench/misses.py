"""The cache misses in transcripts' real usage: which requests re-wrote what was cached, and why.

Not a simulation: every figure comes from the usage counts each request
recorded (the provider's), with ``accounting/misses.py``'s test and price.
Within one sequence (a main thread, a sidechain, a subagent file: one cache
conversation), each request is compared with the previous request of the
same model. Its cause is what the transcript shows (``transcript_cause``):

* the clock: the gap since that request's answer ended, against the TTL its
  writes carried (``usage_ttl``, carried over requests that wrote nothing;
  unknown: the longer, 1 hour);
* the history: the first line of the previous request's history that this
  one does not send again, found by line identity (the reader gives one
  line one object). A history that starts at a compaction summary is a
  compaction. Either is a ``client-rewrite`` at that message, with its
  structure before and after, never its content;
* another model used in between: a ``model-switch``.

What a transcript does not record (the system prompt, the tools, settings,
where the markers were, the blocks the client adds) cannot be a cause here:
those misses are ``unexplained``, as are the provider's own.
"""

from __future__ import annotations

from typing import Any

from scalpel_desktop.accounting.misses import Miss, find_miss, rewritten_tokens, structure_change, \
    transcript_cause, usage_ttl
from scalpel_desktop.bench.reader import Line, Request, Sequence, to_messages

UNKNOWN_TTL = "1h"  # "when unsure assume the longer one" (SPEC 3): fewer misses put on the clock


def sequence_misses(seq: Sequence, prices, margin_s: float) -> list[Miss]:
    """Every miss of one sequence, in request order (``margin_s``: the TTL margin, for the detail)."""
    last: dict[str, int] = {}  # model -> index of its previous request
    ttl: dict[str, str] = {}  # model -> the TTL of what its previous request left cached
    out: list[Miss] = []
    for k, req in enumerate(seq.requests):
        j = last.get(req.model)
        known = ttl.get(req.model, UNKNOWN_TTL)
        last[req.model], ttl[req.model] = k, usage_ttl(req.usage, known)
        if j is None:
            continue
        prev = seq.requests[j]
        if rewritten_tokens(prev.usage, req.usage, req.model) <= 0:
            continue
        others = [r.model for r in seq.requests[j + 1:k] if r.model != req.model]
        cause, detail = transcript_cause(req.ts - prev.ts_done, known, margin_s, rewrite_of(prev, req),
                                         others[-1] if others else None)
        miss = find_miss(req.model, prev.usage, req.usage, prices.rates(req.model), cause, detail,
                         conversation=seq.name, request=req.request_id)
        if miss is not None:
            out.append(miss)
    return out


def rewrite_of(prev: Request, req: Request) -> dict[str, Any] | None:
    """Where ``req`` stops sending ``prev``'s history again (None: it sends all of it): the message
    index, its structure before and after, and whether it is a compaction."""
    before, now = prev.history, req.history
    i = next((n for n, (a, b) in enumerate(zip(before, now)) if a is not b), None)
    if i is None:
        if len(now) >= len(before):
            return None
        i = len(now)  # the history got shorter: the rest was withdrawn
    m = _message_index(before, i)
    was, got = to_messages(before), to_messages(now)
    return {"message": m, "compaction": bool(now) and i < len(now) and now[i].compact_summary,
            **structure_change(was[m], got[m] if m < len(got) else None)}


def _message_index(history: list[Line], i: int) -> int:
    """The message (consecutive same-role lines merged, as ``to_messages``) that line ``i`` is in."""
    m, role = -1, None
    for ln in history[:i + 1]:
        if ln.role != role:
            m, role = m + 1, ln.role
    return max(0, m)
