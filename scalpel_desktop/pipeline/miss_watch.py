"""Cache misses found in the proxy: every answered request's read against what its conversation had cached.

Why: a cache miss is the largest avoidable cost on a Claude Code bill (issue
24) and the provider's usage counts show it, request by request, to whoever
remembers what the previous request cached. The ledger recorder asks this
watcher for the miss fields of each row (migration m008), on the completion
thread, after the answer: never on a request's path.

What is a miss, and its cost, is ``accounting/misses.py`` (the one
definition the bench shares): this request's read fell short of what the
same conversation's previous request of the same model left cached, by more
than the model's minimum cacheable length; the tokens re-written are that
shortfall capped by this request's writes; the cost is tokens x (write -
read) at the request's TTL, from the price table.

The cause, first match wins, from the clock and the bytes:

* ``ttl-expired``: the request came later than the TTL after the previous
  answer of this model ended (the clock counts from the end of the answer);
* ``model-switch``: the conversation used another model in between, or this
  is its first request on this model (what it had cached was the other
  model's: the cache is per model);
* ``system-changed``, ``tools-changed`` (which tool names came and went),
  ``settings-changed`` (which of the message cache's settings fields), and
  ``client-rewrite`` (the first rewritten message): the break the economist
  found in the bytes (the surgery stage's ``break_reason``);
* ``tools-changed`` also when the economist saw no break but the tools that
  sit in the prefix differ from the previous request's: a client declaring
  ``mid-conversation-tool-changes-*`` (Claude Code 2.1.332) is priced as if
  its tools changes kept the cache, yet a real MCP server's
  ``tools/list_changed`` adds a tool that is not deferred and the read stops
  at 0 (docs/claude-code-breaks.md, ``test_miss_causes_tui.py``);
* ``lookback``: an append whose first marker lies more than the provider's
  20-block lookback past the previous request's last marker (where its entry
  was written), so no marker finds that entry: many parallel tool calls in
  one turn (``accounting/misses.blocks_to_next_marker``);
* ``unexplained``: nothing in the bytes or the clock explains it (an
  eviction on the provider's side).

A request whose own warm cut made the read stop short is not a miss: that
re-write was priced and staked as a bet (``surgery/payback.py``). Per
conversation the watcher keeps a few numbers and names (bounded: the
``MAX_CONVERSATIONS`` most recent), never content. Only Messages requests
with usage counts and status 200 are looked at.
"""

from __future__ import annotations

import json
import threading
import zlib
from collections import OrderedDict
from typing import Any

from scalpel_desktop.accounting import misses as m
from scalpel_desktop.exchange import Exchange
from scalpel_desktop.wire.cache_rules import LOOKBACK_BLOCKS, MESSAGE_CACHE_SETTINGS
from scalpel_desktop.wire.jsoncodec import dumps

MAX_CONVERSATIONS = 5000
DETAIL_MAX = 400  # characters of the JSON detail kept in the ledger
_FROM_BYTES = {"system-changed": m.SYSTEM_CHANGED, "tools-changed": m.TOOLS_CHANGED,
               "settings-changed": m.SETTINGS_CHANGED, "client-rewrite": m.CLIENT_REWRITE}
NO_MISS: dict[str, Any] = {}


class _Seen:
    """What one conversation's requests left: per model its last usage, when it ended, its TTL."""

    __slots__ = ("by_model", "last_model", "tools", "settings", "marker")

    def __init__(self) -> None:
        self.by_model: dict[str, tuple[Any, float, str]] = {}
        self.last_model: str | None = None
        self.tools: _Tools | None = None
        self.settings: dict[str, int] | None = None
        self.marker: tuple[int, int] | None = None  # the previous request's last marker (message, block)


class _Tools:
    """A request's tool names and a hash of the tools that sit in the prefix (not deferred)."""

    __slots__ = ("names", "prefix_crc")

    def __init__(self, names: frozenset[str], prefix_crc: int):
        self.names, self.prefix_crc = names, prefix_crc


class MissWatch:
    def __init__(self, prices: Any):
        self.prices = prices
        self._seen: OrderedDict[Any, _Seen] = OrderedDict()
        self._lock = threading.Lock()  # (completions of different conversations may run on a pool)

    def fields(self, ex: Exchange) -> dict[str, Any]:
        """The ledger row's miss fields for ``ex`` (empty: no miss); remembers what it cached."""
        resp, req = ex.response, ex.request
        usage = resp.usage if resp is not None else None
        if usage is None or resp.status != 200 or req.endpoint != "messages" or ex.key is None or not ex.model:
            return NO_MISS
        with self._lock:
            seen = self._seen.get(ex.key)
            if seen is None:
                seen = self._seen[ex.key] = _Seen()
                if len(self._seen) > MAX_CONVERSATIONS:
                    self._seen.popitem(last=False)
            else:
                self._seen.move_to_end(ex.key)
            tools, settings, messages, auto = _facts(ex)
            out = self._miss(ex, seen, usage, tools, settings, messages, auto)
            prev = seen.by_model.get(ex.model)
            seen.by_model[ex.model] = (usage, resp.finished_at, m.usage_ttl(usage, prev[2] if prev else "1h"))
            seen.last_model = ex.model
            if tools is not None:
                seen.tools = tools
            if settings is not None:
                seen.settings = settings
            seen.marker = m.last_marker(messages, auto) if messages is not None else None
        return out

    def _miss(self, ex: Exchange, seen: _Seen, usage: Any, tools: _Tools | None,
              settings: dict[str, int] | None, messages: list | None = None, auto: bool = False) -> dict[str, Any]:
        prev = seen.by_model.get(ex.model)
        if ex.surgery is not None and ex.surgery.rewrite_tokens:
            return NO_MISS  # our own warm cut's re-write: priced and staked, not a miss
        if prev is None:
            if seen.last_model is None or seen.last_model not in seen.by_model:
                return NO_MISS  # the conversation's first request
            # The first request on another model: the cache the conversation had is the other model's.
            other_usage = seen.by_model[seen.last_model][0]
            miss = m.find_miss(ex.model, other_usage, usage, self.prices.rates(ex.model), m.MODEL_SWITCH,
                               {"from": seen.last_model, "first_on_model": True})
            return _fields(miss)
        prev_usage, ended, ttl = prev
        gap = float(ex.request.received_at) - float(ended)
        other = seen.last_model if seen.last_model not in (None, ex.model) else None
        cause, detail = m.transcript_cause(gap, ttl, 0.0, None, other)
        if cause == m.UNEXPLAINED:
            figures = ex.decision.figures if ex.decision is not None else {}
            named = _FROM_BYTES.get(str(figures.get("break_reason") or ""))
            if named is not None:
                cause = named
                detail = {**detail, "break": figures.get("break")}
            elif tools is not None and seen.tools is not None and tools.prefix_crc != seen.tools.prefix_crc:
                cause, detail = m.TOOLS_CHANGED, {**detail, "seen_by": "miss-watch"}  # the economist saw no break
            elif messages is not None and seen.marker is not None:
                past = m.blocks_to_next_marker(messages, seen.marker, auto)
                if past is not None and past > LOOKBACK_BLOCKS:
                    cause, detail = m.LOOKBACK, {**detail, "blocks_past": past, "lookback": LOOKBACK_BLOCKS}
            if cause == m.TOOLS_CHANGED and tools is not None and seen.tools is not None:
                detail.update(added=sorted(tools.names - seen.tools.names)[:20],
                              removed=sorted(seen.tools.names - tools.names)[:20])
            if cause == m.SETTINGS_CHANGED and settings is not None and seen.settings is not None:
                detail["fields"] = sorted(k for k in MESSAGE_CACHE_SETTINGS if settings.get(k) != seen.settings.get(k))
        return _fields(m.find_miss(ex.model, prev_usage, usage, self.prices.rates(ex.model), cause, detail))


def _fields(miss: m.Miss | None) -> dict[str, Any]:
    if miss is None:
        return NO_MISS
    text = json.dumps(miss.detail, separators=(",", ":"), default=str)
    return {"miss_cause": miss.cause, "miss_tokens": miss.tokens_rewritten,
            "miss_usd": round(miss.cost_usd, 8), "miss_detail": text[:DETAIL_MAX]}


def _facts(ex: Exchange) -> tuple[_Tools | None, dict[str, int] | None, list | None, bool]:
    """What the miss watch reads of the request's document, when its body was parsed anyway (a
    first sighting sent as it came may not be: then nothing, and no detail): its tools (names, the
    prefix's hash), a hash of each message-cache setting, its messages, and whether a top-level
    marker marks its last block."""
    doc = ex.doc if ex.parsed else None
    if not isinstance(doc, dict):
        return None, None, None, False
    tools = doc.get("tools")
    tools = [t for t in tools if isinstance(t, dict)] if isinstance(tools, list) else []
    in_prefix = [t for t in tools if t.get("defer_loading") is not True]  # deferred tools are not in it
    names = frozenset(str(t.get("name")) for t in tools)
    settings = {k: zlib.crc32(dumps(doc.get(k))) for k in MESSAGE_CACHE_SETTINGS}
    messages = doc.get("messages") if isinstance(doc.get("messages"), list) else None
    return _Tools(names, zlib.crc32(dumps(in_prefix))), settings, messages, doc.get("cache_control") is not None
