"""Cache misses: a read that stopped short of what the conversation had cached, and what it cost.

A cache miss is the largest avoidable cost on a Claude Code bill (issue 24),
and nothing else in the house names it. This module is the one definition,
pure (no I/O), for the bench (``bench/misses.py``, over transcripts' real
usage) and for the proxy (issue 24 step 1, which knows more than a
transcript and passes its own cause in).

The test
--------
A request leaves cached what it read plus what it wrote (``cached_after``:
its prompt up to its last written breakpoint). The next request of the same
conversation *and model* (cache state is per model, SPEC 5) should read at
least that much. When its read falls short of it by more than the model's
minimum cacheable length (``cache_model.min_cacheable_for``: a shorter
shortfall may be only where a breakpoint could not write), it is a miss.

Its tokens re-written are the shortfall, capped by the request's own cache
writes (``rewritten_tokens``): what was cached, read short, and billed again
as a write. The request's tokens beyond the previous prompt were new and
would have been written anyway. A shortfall with nothing written (the prompt
shrank, or no breakpoint wrote) re-wrote nothing and is not a miss.

Its cost is tokens x (write price - read price) at the request's TTL, from
the price table (``miss_cost``): they would have been read, and were
written. A request that wrote at both TTLs bills its re-written tokens at the
1-hour rate first: 1-hour entries come before 5-minute ones (SPEC 3) and the
re-written part lies before the new part.

The causes
----------
The names are the issue's, and checks read them (``CAUSES``). A transcript
shows only some (``transcript_cause``): the clock (``ttl-expired``), another
model used in between (``model-switch``), a history the client rewrote or
compacted (``client-rewrite``); everything else there is ``unexplained``.
The TTL test counts the gap from the end of the previous answer: by the
documentation the entry is gone at ``ended + TTL`` (``surgery/ttl_margin.py``).
The TTL margin is how much later a read may still succeed; a miss inside it
is still the TTL's (``within_margin`` in its detail says so), since the
margin only delays calling a cache cold, it explains nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from scalpel_desktop.accounting.cache_model import min_cacheable_for
from scalpel_desktop.wire.cache_rules import TTL_SECONDS
from scalpel_desktop.wire.usage import Usage

if TYPE_CHECKING:
    from scalpel_desktop.accounting.prices import Rates

TTL_EXPIRED = "ttl-expired"  # the gap since the previous answer ended is past the TTL
MODEL_SWITCH = "model-switch"  # the conversation used another model since this model's previous request
SYSTEM_CHANGED = "system-changed"
TOOLS_CHANGED = "tools-changed"  # detail: which tool names
SETTINGS_CHANGED = "settings-changed"  # detail: which field
CLIENT_REWRITE = "client-rewrite"  # detail: the first rewritten message and its structure, never its content
LOOKBACK = "lookback"  # the breakpoint lay past the lookback from the last live entry (``blocks_to_next_marker``)
UNEXPLAINED = "unexplained"  # nothing in the bytes or the clock explains it: the provider's side
CAUSES = (TTL_EXPIRED, MODEL_SWITCH, SYSTEM_CHANGED, TOOLS_CHANGED, SETTINGS_CHANGED, CLIENT_REWRITE,
          LOOKBACK, UNEXPLAINED)
TRANSCRIPT_CAUSES = (TTL_EXPIRED, MODEL_SWITCH, CLIENT_REWRITE, UNEXPLAINED)  # what a transcript can show


@dataclass(frozen=True)
class Miss:
    """One request whose read stopped short: what it re-wrote, what that cost, and why."""

    model: str
    tokens_rewritten: int
    cost_usd: float
    read_stopped_at: int  # tokens into the prompt where the read stopped (the request's cache read)
    cause: str
    detail: Mapping[str, Any] = field(default_factory=dict)
    conversation: str = ""  # the caller's name for it (the bench: its sequence)
    request: str = ""  # the request's id, where the caller has one

    def __post_init__(self) -> None:
        if self.cause not in CAUSES:
            raise ValueError(f"unknown miss cause {self.cause!r}; one of {', '.join(CAUSES)}")


def cached_after(usage: Usage) -> int:
    """What a request leaves cached: its read plus its writes (its prompt up to its last written breakpoint)."""
    return usage.cache_read + usage.cache_write


def usage_ttl(usage: Usage, known: str) -> str:
    """The TTL a request's writes carry ("1h" when any is 1-hour), else ``known`` (it wrote nothing)."""
    if usage.cache_write_1h > 0:
        return "1h"
    if usage.cache_write_5m > 0:
        return "5m"
    return known


def rewritten_tokens(previous: Usage, usage: Usage, model: str | None, floor: int | None = None) -> int:
    """Tokens request ``usage`` re-wrote of what ``previous`` (the same conversation and model) left
    cached: the shortfall of its read, capped by its writes; 0 when the shortfall is not more than
    ``floor`` (default: the model's minimum cacheable length), i.e. no miss."""
    shortfall = cached_after(previous) - usage.cache_read
    if shortfall <= (min_cacheable_for(model) if floor is None else floor):
        return 0
    return min(shortfall, usage.cache_write)


def miss_cost(rates: "Rates", usage: Usage, tokens: int) -> float:
    """USD the re-written ``tokens`` cost beyond a read: tokens x (write - read) at the request's
    TTL (1-hour writes first: they lie before the 5-minute ones)."""
    r = rates.for_prompt(usage.prompt_tokens)
    at_1h = min(tokens, usage.cache_write_1h)
    return at_1h * (r.write_1h - r.cache_read) + (tokens - at_1h) * (r.write_5m - r.cache_read)


def find_miss(model: str, previous: Usage | None, usage: Usage, rates: "Rates", cause: str = UNEXPLAINED,
              detail: Mapping[str, Any] | None = None, floor: int | None = None, conversation: str = "",
              request: str = "") -> Miss | None:
    """The miss of request ``usage`` against ``previous`` (None: nothing known cached), or None.
    ``cause`` comes from the caller, who knows what the bytes and the clock show."""
    if previous is None:
        return None
    tokens = rewritten_tokens(previous, usage, model, floor)
    if tokens <= 0:
        return None
    return Miss(model, tokens, miss_cost(rates, usage, tokens), usage.cache_read, cause, dict(detail or {}),
                conversation, request)


# ---------------------------------------------------------------- what a transcript shows


def message_structure(message: Mapping[str, Any]) -> dict[str, Any]:
    """A message's structure, never its content: its role and its blocks' types in order."""
    content = message.get("content")
    if isinstance(content, str):
        types = ["text"]
    else:
        types = [str(b.get("type")) for b in content or () if isinstance(b, Mapping)]
    return {"role": str(message.get("role")), "blocks": types}


def structure_change(was: Mapping[str, Any], now: Mapping[str, Any] | None) -> dict[str, Any]:
    """How the first rewritten message changed: its structure before and after, and which of
    ``role``, ``block types``, ``order`` differ (``content`` when only the content did; it is not shown)."""
    a = message_structure(was)
    b = message_structure(now) if now is not None else {"role": None, "blocks": []}
    changed = []
    if a["role"] != b["role"]:
        changed.append("role")
    if sorted(a["blocks"]) != sorted(b["blocks"]):
        changed.append("block types")
    elif a["blocks"] != b["blocks"]:
        changed.append("order")
    return {"was": a, "now": b, "changed": changed or ["content"]}


def transcript_cause(gap_s: float, ttl: str, margin_s: float, rewrite: Mapping[str, Any] | None = None,
                     other_model: str | None = None) -> tuple[str, dict[str, Any]]:
    """(cause, detail) of a miss from what a transcript shows, first match wins:

    * the ``gap_s`` since the previous answer of this model ended is past ``ttl``: ``ttl-expired``;
    * ``rewrite`` (the first rewritten message, a compaction): ``client-rewrite``;
    * ``other_model`` was used since this model's previous request: ``model-switch``;
    * else ``unexplained``: what a transcript does not record (system prompt, tools, settings,
      markers) or the provider's side.
    """
    ttl_s = TTL_SECONDS.get(ttl, TTL_SECONDS["1h"])
    clock = {"gap_s": round(float(gap_s), 3), "ttl": ttl}
    if gap_s > ttl_s:
        past = float(gap_s) - ttl_s
        return TTL_EXPIRED, {**clock, "past_ttl_s": round(past, 3), "within_margin": past <= margin_s}
    if rewrite is not None:
        return CLIENT_REWRITE, {**clock, **rewrite}
    if other_model is not None:
        return MODEL_SWITCH, {**clock, "from": other_model}
    return UNEXPLAINED, clock


# ---------------------------------------------------------------- the lookback

MARKER_SCAN_MESSAGES = 64  # how far back from the end ``last_marker`` looks for a request's last marker


def _items(message: Any) -> list[Any]:
    content = message.get("content") if isinstance(message, Mapping) else None
    if isinstance(content, str):
        return [content]
    return list(content) if isinstance(content, list) else ([] if content is None else [content])


def _marked(item: Any) -> bool:
    return isinstance(item, Mapping) and item.get("cache_control") is not None


def last_marker(messages: Sequence[Any], auto: bool = False) -> tuple[int, int] | None:
    """(message index, block index) of the last ``cache_control`` marker among ``messages`` (a
    top-level marker, ``auto``, marks the last block), or None: none within the last
    ``MARKER_SCAN_MESSAGES`` messages. O(the messages after the last marker): a client that marks
    its last message (Claude Code) costs one message."""
    for mi in range(len(messages) - 1, max(-1, len(messages) - 1 - MARKER_SCAN_MESSAGES), -1):
        items = _items(messages[mi])
        if auto and mi == len(messages) - 1 and items:
            return mi, len(items) - 1
        for bi in range(len(items) - 1, -1, -1):
            if _marked(items[bi]):
                return mi, bi
    return None


def blocks_to_next_marker(messages: Sequence[Any], after: tuple[int, int], auto: bool = False) -> int | None:
    """Content blocks from the block at ``after`` (the previous request's last marker, where its
    entry was written) to this request's first marker past it; None when there is none. The
    provider looks for an entry at most ``LOOKBACK_BLOCKS`` blocks back from each marker
    (``accounting/cache_model.py``; one block per content block, as the emulator counts): a marker
    farther than that from every entry reads nothing of the messages. O(the messages since ``after``)."""
    mi0, bi0 = after
    distance = 0
    for mi in range(mi0, len(messages)):
        items = _items(messages[mi])
        for bi in range(bi0 + 1 if mi == mi0 else 0, len(items)):
            distance += 1
            if _marked(items[bi]) or (auto and mi == len(messages) - 1 and bi == len(items) - 1):
                return distance
    return None


# ---------------------------------------------------------------- totals


def summary(misses: Iterable[Miss], bill_usd: float) -> dict[str, Any]:
    """``{"count", "tokens", "cost_usd", "cost_pct", "by_cause": {cause: {"count", "tokens", "cost_usd"}}}``
    over ``misses``; ``cost_pct`` of ``bill_usd``; causes in ``CAUSES`` order, only those seen."""
    got = list(misses)
    by: dict[str, dict[str, Any]] = {}
    for cause in CAUSES:
        these = [m for m in got if m.cause == cause]
        if these:
            by[cause] = _totals(these)
    cost = sum(m.cost_usd for m in got)
    return {**_totals(got), "cost_pct": _round(100.0 * cost / bill_usd if bill_usd > 0 else 0.0, 3),
            "by_cause": by}


def _totals(misses: Sequence[Miss]) -> dict[str, Any]:
    return {"count": len(misses), "tokens": sum(m.tokens_rewritten for m in misses),
            "cost_usd": _round(sum(m.cost_usd for m in misses), 6)}


def _round(x: float, n: int) -> float:
    return round(float(x), n) + 0.0  # never -0.0
