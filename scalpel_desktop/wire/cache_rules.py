"""The prompt cache's facts: the TTL table, the marker limits, the TTL a request asks for.

One home for what the economist, the cache model (``accounting/``) and the
request rules (``wire/api_rules.py``) all rely on (SPEC 3): entries live 5
minutes or 1 hour from their last use (``cache_control.ttl``), OpenAI's
``prompt_cache_retention: "24h"`` a day, automatic (OpenAI) entries are
counted at an hour; at most 4 markers per request; a marker looks back about
20 blocks for an earlier entry. When unsure, assume the longer TTL.
"""

from __future__ import annotations

from typing import Any, Mapping

CACHE_TTLS = ("5m", "1h")  # what cache_control.ttl accepts
AUTO_TTL = "auto"  # entries stored by automatic (OpenAI) caching
TTL_SECONDS: dict[str, float] = {"5m": 300.0, "1h": 3600.0, "24h": 86400.0, AUTO_TTL: 3600.0}
LONGEST_TTL_S = 3600.0  # Anthropic's longest; "when unsure assume the longer"
MAX_BREAKPOINTS = 4
LOOKBACK_BLOCKS = 20  # a breakpoint looks back about 20 blocks for an earlier entry
# Top-level fields of a Messages request that invalidate the messages' cache when they change (the
# system and tools keep theirs): ``tool_choice`` and ``thinking`` (the provider's prompt-caching
# documentation), ``output_config`` (the effort: Claude Code itself warns that switching it mid-
# conversation re-reads the history uncached) and ``context_management`` (its strategies decide which
# earlier thinking and tool results are rendered, so a change rewrites the messages). Claude Code
# 2.1.332 sends the last two on every request (``../shared/corpus/wire``). The economist hashes them
# (a change is a ``settings-changed`` break) and the cache model salts the messages with them.
# The economist's natural-break reasons after which the whole history is re-written anyway (a cut there
# is free, a warm cut's bet has stopped earning); the ledger's figures carry them as ``break_reason``.
COLD_BREAKS = ("ttl-expired", "system-changed", "tools-changed", "settings-changed", "client-rewrite")
MESSAGE_CACHE_SETTINGS = ("tool_choice", "thinking", "output_config", "context_management")


def ttl_seconds(ttl: str | None) -> float:
    """Seconds for a ``cache_control.ttl`` value; unknown or absent: the longer one."""
    if ttl is None:
        return LONGEST_TTL_S
    return TTL_SECONDS.get(ttl, LONGEST_TTL_S)


def marker_ttl(cache_control: Any) -> str:
    """The TTL a marker asks for, read leniently: "1h" when it says so, else "5m"."""
    if isinstance(cache_control, dict) and cache_control.get("ttl") == "1h":
        return "1h"
    return "5m"


def _marker_ttls(blocks: Any, out: list[str]) -> None:
    if not isinstance(blocks, list):
        return
    for b in blocks:
        if not isinstance(b, dict):
            continue
        cc = b.get("cache_control")
        if isinstance(cc, dict):
            out.append(marker_ttl(cc))
        inner = b.get("content")
        if isinstance(inner, list):
            _marker_ttls(inner, out)


# How many of a body's last messages ``message_ttl_s`` reads for their markers.
MARKED_TAIL = 3


def message_ttl_s(endpoint: str, doc: dict) -> float:
    """The TTL of the entries a cut touches (the messages'); when unsure, the longer.

    Claude Code marks the last message (older versions: the last two), so only
    the last messages and a top-level marker are looked at; without any, the
    system's markers; without those, the longest TTL.
    """
    if endpoint != "messages":
        return TTL_SECONDS["24h"] if doc.get("prompt_cache_retention") == "24h" else LONGEST_TTL_S
    ttls: list[str] = []
    auto = doc.get("cache_control")
    if isinstance(auto, dict):
        ttls.append(marker_ttl(auto))
    msgs = doc.get("messages") or []
    for m in msgs[-MARKED_TAIL:]:
        if isinstance(m, dict):
            _marker_ttls(m.get("content"), ttls)
    if not ttls:
        _marker_ttls(doc.get("system"), ttls)
    if not ttls:
        return ttl_seconds(None)
    return ttl_seconds("1h" if "1h" in ttls else "5m")


def overrun(gap_s: float, ttl_s: float, prev_read: int | None, read: int | None) -> tuple[float, bool] | None:
    """What one request says of how long the provider keeps a cache past its TTL: it came ``gap_s``
    after the previous answer ended, past that request's ``ttl_s``; (seconds past the TTL, were the
    conversation's entries read?). They were when its cache read reached as far as the previous
    request's own read (``prev_read``, an entry surely there then: the previous request's last
    message may be rewritten by the client, so its whole prompt is no test). A dead conversation
    cache still reads the static system prompt other sessions keep warm: where the previous read
    went no further, a dead one passes for alive, which only makes a margin built on it larger.
    None: no gap past the TTL, or no read to compare with."""
    if prev_read is None or read is None or prev_read <= 0 or gap_s <= ttl_s:
        return None
    return gap_s - ttl_s, read >= prev_read


def tool_changes_beta(headers: Mapping[str, str]) -> bool:
    """True when the client declared the ``mid-conversation-tool-changes-*`` beta."""
    beta = ""
    for k, v in headers.items():
        if k.lower() == "anthropic-beta":
            beta = v
            break
    return any(b.strip().startswith("mid-conversation-tool-changes") for b in beta.split(","))
