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
"""

from __future__ import annotations

from typing import Any

from scalpel_desktop.wire.api_rules import CacheControlError, check_breakpoints
from scalpel_desktop.wire.cache_rules import MAX_BREAKPOINTS, marker_ttl

# Blocks the API lets carry cache_control (never thinking blocks: they are sent back as they came).
PINNABLE_TYPES = ("text", "tool_result", "tool_use", "image", "document")


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
    """Per message, looked at only when asked: may its last block take a marker?"""

    __slots__ = ("msgs",)

    def __init__(self, msgs: list):
        self.msgs = msgs

    def __len__(self) -> int:
        return len(self.msgs)

    def __getitem__(self, i: int) -> bool:
        if _text_content(self.msgs[i]) is not None:
            return True
        b = _last_block(self.msgs[i])
        return b is not None and "cache_control" not in b


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
    return Pinnable(doc.get("messages") or []), max(0, MAX_BREAKPOINTS - used)


def pinned(doc: dict, unit: int, ttl: str) -> dict | None:
    """``doc`` with a ``ttl`` marker on the last block of message ``unit``; None when that is
    not allowed (no such block, a 5th marker, a 1h marker after a 5m one)."""
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
    msg = dict(msgs[unit])
    content = [] if text is not None else list(msg["content"])
    content[-1:] = [dict(block, cache_control=marker)]
    msg["content"] = content
    out = dict(doc)
    out["messages"] = list(msgs)
    out["messages"][unit] = msg
    try:
        check_breakpoints([t for _, t in marker_ttls(out)])
    except CacheControlError:
        return None
    return out
