"""The pin: the free cache marker on a live entry's block, so a warm cut's read boundary is certain.

Claude Code puts 3 of the 4 ``cache_control`` markers a request may carry
(the static system prompt, the end of the system prompt, the last message).
A warm cut changes a message in the middle of the history; where the cache
read then stops depends on the lookback of the last marker, which the API
leaves undocumented. A marker on the last block of an earlier request's last
message - where that request wrote its entry - looks up its own block first,
so the read stops there under any lookback. The marker is not part of the
cached content (it changes no cache key); only its position matters.

Anthropic Messages bodies only. A message whose content is a string takes
the marker as that string's one text block (what the API reads it as, and
what Claude Code itself sends for its own last message). ``pinnable(doc)``
says which messages' last blocks may take a marker and how many markers are free; ``pinned(doc, unit,
ttl)`` is a copy of ``doc`` with the marker added (copy-on-write: the message
objects of ``doc`` are never touched). ``surgery/validate.py``
(``pin_problems``) checks that exactly this marker was added.

**A moved marker.** Claude Code before 2.1 sends all 4 markers: two in the
system prompt and the last block of each of the last two messages. None is
free, but the one on ``messages[-2]`` may be MOVED to the pin (still 4
markers, none added; the marker's own value, so its TTL is the client's).
What that changes is only where this request reads and writes: it still
writes its entry at its last message and reads from the pin, and no longer
writes one at ``messages[-2]``. The next request reads this one's
last-message entry as before; only a request that replaces this one's last
message (Esc withdraws the turn, ``docs/claude-code-breaks.md``) would have
read the entry at ``messages[-2]`` and now falls back to the pin's (or a
later one of the cut prefix). That is certain only when the pin's block is
within the shortest lookback (``REACH_BLOCKS``, the smallest reading of
"about 20") of ``messages[-2]``'s last block, where that request's own marker
sits: ``Pinnable.reach(unit)`` counts the blocks; ``surgery/payback.py``
prices the fallback's re-write and moves only within reach.
``Pinnable.moves_from`` is the message whose marker may move (None: none may).
"""

from __future__ import annotations

from typing import Any

from scalpel_desktop.accounting.cache_model import LOOKBACK_VARIANTS
from scalpel_desktop.wire.api_rules import CacheControlError, check_breakpoints
from scalpel_desktop.wire.cache_rules import MAX_BREAKPOINTS, TTL_SECONDS, marker_ttl

# Blocks the API lets carry cache_control (never thinking blocks: they are sent back as they came).
PINNABLE_TYPES = ("text", "tool_result", "tool_use", "image", "document")
# How far (in blocks) a breakpoint surely looks back: the shortest reading of "about 20" (SPEC 3;
# the property tests run 12, 20 and 28). A moved marker's fallback must lie within it.
REACH_BLOCKS = min(LOOKBACK_VARIANTS)


def marker_ttls(doc: dict) -> list[tuple[tuple[int, int], str]]:
    """((section, position), ttl) of every marker in prefix order (tools, system, messages)."""
    out: list[tuple[tuple[int, int], str]] = []
    for i, t in enumerate(doc.get("tools") or []):
        if isinstance(t, dict) and isinstance(t.get("cache_control"), dict):
            out.append(((0, i), marker_ttl(t["cache_control"])))
    system = doc.get("system")
    if isinstance(system, list):
        for i, b in enumerate(system):
            if isinstance(b, dict) and isinstance(b.get("cache_control"), dict):
                out.append(((1, i), marker_ttl(b["cache_control"])))
    for i, m in enumerate(doc.get("messages") or []):
        content = m.get("content") if isinstance(m, dict) else None
        if not isinstance(content, list):
            continue
        for b in content:
            if not isinstance(b, dict):
                continue
            if isinstance(b.get("cache_control"), dict):
                out.append(((2, i), marker_ttl(b["cache_control"])))
            inner = b.get("content") if b.get("type") == "tool_result" else None
            if isinstance(inner, list):
                for x in inner:
                    if isinstance(x, dict) and isinstance(x.get("cache_control"), dict):
                        out.append(((2, i), marker_ttl(x["cache_control"])))
    return out


def _last_block(m: Any) -> dict | None:
    content = m.get("content") if isinstance(m, dict) else None
    if not isinstance(content, list) or not content:
        return None
    b = content[-1]
    return b if isinstance(b, dict) and b.get("type") in PINNABLE_TYPES else None


class Pinnable:
    """Per message, looked at only when asked: may its last block take a marker?

    ``moves_from``: the message (``messages[-2]``) whose marker may be moved to the pin when no
    marker is free (None: none may); ``moved_ttl_s``: that marker's TTL."""

    __slots__ = ("msgs", "moves_from", "moved_ttl_s")

    def __init__(self, msgs: list, moves_from: int | None = None, moved_ttl_s: float = 0.0):
        self.msgs = msgs
        self.moves_from = moves_from
        self.moved_ttl_s = moved_ttl_s

    def reach(self, unit: int) -> int:
        """Blocks from the last block of message ``unit`` to the last block of ``moves_from``
        (how far back from the moved marker's block the pin's block sits)."""
        if self.moves_from is None or not 0 <= unit < self.moves_from:
            return -1
        return sum(_blocks(m) for m in self.msgs[unit + 1:self.moves_from + 1])

    def __len__(self) -> int:
        return len(self.msgs)

    def __getitem__(self, i: int) -> bool:
        if _text_content(self.msgs[i]) is not None:
            return True
        b = _last_block(self.msgs[i])
        return b is not None and "cache_control" not in b


def _blocks(m: Any) -> int:
    """Cacheable blocks of one message (a string is one text block; accounting/prefix_blocks.py)."""
    content = m.get("content") if isinstance(m, dict) else None
    return 1 if isinstance(content, str) else len(content) if isinstance(content, list) else 0


def _marked_last(m: Any) -> dict | None:
    """The marker on message ``m``'s last block (a markable one), else None."""
    content = m.get("content") if isinstance(m, dict) else None
    b = content[-1] if isinstance(content, list) and content else None
    if isinstance(b, dict) and b.get("type") in PINNABLE_TYPES and isinstance(b.get("cache_control"), dict):
        return b["cache_control"]
    return None


def movable_marker(doc: dict) -> int | None:
    """``len(messages) - 2`` when the client's layout marks the last blocks of both of the last
    two messages (Claude Code before 2.1): that marker may move to a pin. Else None."""
    msgs = doc.get("messages") if isinstance(doc, dict) else None
    if not isinstance(msgs, list) or len(msgs) < 3:
        return None
    if _marked_last(msgs[-1]) is None or _marked_last(msgs[-2]) is None:
        return None
    return len(msgs) - 2


def _text_content(m: Any) -> str | None:
    """A message whose content is a non-empty string (Claude Code 2.1's environment message, a
    turned-back last message): the string, else None. The API reads such content as one text
    block, so the pin turns it into that block with the marker, exactly as Claude Code does with
    its own last message every turn (SPEC 9: "a string becomes a block list with a cache marker")
    while the entries before it keep being read."""
    content = m.get("content") if isinstance(m, dict) else None
    return content if isinstance(content, str) and content else None


def pinnable(doc: dict, raw: bytes | None = None) -> tuple[Pinnable | list, int]:
    """Per message (lazily), whether its last block may take a marker; and how many markers are free.

    With the request's ``raw`` bytes the markers are counted there (every ``"cache_control"``
    key; inside a JSON string the quotes would be escaped, so this never counts too few);
    without, by walking the document."""
    if not isinstance(doc, dict) or "cache_control" in doc:  # automatic caching: leave it be
        return [], 0
    used = raw.count(b'"cache_control"') if raw is not None else len(marker_ttls(doc))
    free = max(0, MAX_BREAKPOINTS - used)
    msgs = doc.get("messages") or []
    moves = movable_marker(doc) if free == 0 else None
    if moves is None:
        return Pinnable(msgs), free
    return Pinnable(msgs, moves, TTL_SECONDS[marker_ttl(_marked_last(msgs[moves]))]), free


def pinned(doc: dict, unit: int, ttl: str) -> dict | None:
    """``doc`` with a ``ttl`` marker on the last block of message ``unit``; None when that is
    not allowed (no such block, a 5th marker, a 1h marker after a 5m one). Where the 4 markers
    are all taken and ``movable_marker(doc)`` says the client marks the last two messages, the
    marker on ``messages[-2]`` is moved there instead (its own value: the client's TTL)."""
    msgs = doc.get("messages")
    if not isinstance(msgs, list) or not 0 <= unit < len(msgs):
        return None
    text = _text_content(msgs[unit])
    block = {"type": "text", "text": text} if text is not None else _last_block(msgs[unit])
    if block is None or "cache_control" in block:
        return None
    marker: dict[str, Any] = {"type": "ephemeral"}
    if ttl == "1h":
        marker["ttl"] = "1h"
    out = dict(doc)
    out["messages"] = list(msgs)
    ttls = [t for _, t in marker_ttls(doc)]
    moves = movable_marker(doc) if len(ttls) >= MAX_BREAKPOINTS else None
    if moves is not None:
        if unit >= moves:
            return None
        old = dict(msgs[moves])
        content = list(old["content"])
        last = dict(content[-1])
        marker = last.pop("cache_control")
        content[-1] = last
        old["content"] = content
        out["messages"][moves] = old
    msg = dict(msgs[unit])
    content = [] if text is not None else list(msg["content"])
    content[-1:] = [dict(block, cache_control=marker)]
    msg["content"] = content
    out["messages"][unit] = msg
    try:
        check_breakpoints([t for _, t in marker_ttls(out)])
    except CacheControlError:
        return None
    return out
