"""The prompt-cache billing model (SPEC section 3): the one implementation.

The emulated upstream bills every request with it, and the bench replays real
transcripts through it, so "what a request would cost" has exactly one
definition in this project. Pure: no I/O, no aiohttp.

The model
---------
A request is a list of ``Block`` s in prefix order tools -> system -> messages
(one block per tool declaration, per system block, per message content block;
a string ``system`` or string message ``content`` is one text block). Each
block carries ``chain``, a hash of the whole prefix up to and including it,
so two requests share a cache entry at position i exactly when their first
i+1 blocks are identical. The chain also mixes in section boundaries, message
boundaries with their role, and a *settings salt* (``tool_choice``,
``thinking``) at the start of the messages, which gives SPEC's "what breaks
what": a tools change moves every chain, a system change moves system and
messages, a settings change moves only messages. Tools declared with
``"defer_loading": true`` (tool search) are not part of the prefix: loading
one mid-conversation (Claude Code's ``mid-conversation-tool-changes`` beta)
breaks nothing; its ``tool_reference`` block counts as its own JSON (the
definition the real API expands there is not counted). Hash and tokens ignore
``cache_control`` markers (``accounting.tokens.canonical_block``). Key order
inside a block counts (the real API renders semantically; the emulator is the
stricter judge, which is what a byte-preserving proxy wants).

``PromptCache.bill`` for one request:

1. At most 4 breakpoints (else ``CacheControlError``, the API's 400); every
   ``"1h"`` breakpoint must come before every ``"5m"`` one.
2. Each breakpoint at block i looks for a live entry at blocks i, i-1, ...,
   i-``lookback`` (the breakpoint itself plus 20 blocks before it). The
   longest prefix found is *read* (``cache_read``); every entry found is
   refreshed to now + its TTL (``refresh="each"``), or only the entry read
   (``refresh="read"``).
3. Each breakpoint whose prefix is at least ``min_cacheable`` tokens gets an
   entry (TTL from its ``cache_control``). Tokens between the read point (or
   the previous written breakpoint) and a breakpoint are *written*, at that
   breakpoint's TTL (``cache_write_5m`` / ``cache_write_1h``).
4. ``input_tokens`` = everything after the last cached point.

Two behaviours are not documented (SPEC 3), so the model is switchable between
their readings and the tests run under each: the exact lookback
(``lookback``: about 20; ``LOOKBACK_VARIANTS`` 12, 20, 28) and whether a hit at
one breakpoint also refreshes the entries found at the other breakpoints of
the request (``refresh``: ``"each"``, every breakpoint's own entry is
refreshed, or ``"read"``, only the entry the read stops at; a breakpoint whose
own entry exists but is not the one read leaves it as it was).
``PromptCache.variant(name)`` builds one from a name such as ``"lookback=12,refresh=read"``.

OpenAI's automatic prefix caching is ``PromptCache.bill_automatic``: the
longest live prefix at any block boundary is read, every boundary past the
minimum is stored, and writes are free (not reported).

Tokens: the emulator counts ``tokens.rule_tokens`` (ceil(compact JSON bytes /
4)); the bench passes its own estimates through ``PrefixBuilder(count=...)``
or by building ``Block`` s itself.
"""

from __future__ import annotations

import re
from functools import lru_cache
from itertools import accumulate
from dataclasses import dataclass, field
from typing import Hashable, Mapping, Sequence

from scalpel_desktop.accounting.prefix_blocks import (  # re-exported: one import for callers
    CACHE_TTLS, Block, PrefixBuilder, builder_for, openai_blocks, request_blocks, ttl_of,
    with_breakpoints)
from scalpel_desktop.wire.api_rules import CacheControlError, check_breakpoints
from scalpel_desktop.wire.cache_rules import AUTO_TTL, LOOKBACK_BLOCKS, MAX_BREAKPOINTS, TTL_SECONDS
from scalpel_desktop.wire.usage import Usage

__all__ = ["AUTO_TTL", "Bill", "Block", "CACHE_TTLS", "CacheControlError", "DEFAULT_MIN_CACHEABLE", "Entry",
           "LOOKBACK_BLOCKS", "LOOKBACK_VARIANTS", "REFRESH_READINGS", "MAX_BREAKPOINTS", "MIN_CACHEABLE_TABLE", "PrefixBuilder", "PromptCache", "TTL_SECONDS",
           "builder_for", "check_breakpoints", "min_cacheable_for", "openai_blocks", "request_blocks", "ttl_of",
           "with_breakpoints"]

DEFAULT_MIN_CACHEABLE = 1024
REFRESH_READINGS = ("each", "read")  # does a hit refresh the entries at the other breakpoints?
LOOKBACK_VARIANTS = (12, 20, 28)  # readings of "about 20 blocks"

# Minimum cacheable prefix per model family, as published (Anthropic prompt
# caching docs and provider mirrors, read 2026): first match wins, else 1,024.
MIN_CACHEABLE_TABLE: tuple[tuple[str, int], ...] = (
    (r"opus-4-6|opus-4-5|haiku-4-5", 4096),
    (r"sonnet-4-6|opus-4-7", 2048),
    (r"claude-3-5-haiku|claude-3-haiku|haiku-3", 2048),
    (r"opus-5|fable-5|mythos-5", 512),  # reported for the 5 family; unverified
    (r"sonnet-4-5|sonnet-4|opus-4-1|opus-4|sonnet-3-7|claude-3-7|opus-4-8|sonnet-5", 1024),
)


@lru_cache(maxsize=256)
def min_cacheable_for(model: str | None) -> int:
    """The minimum cacheable prefix (tokens) for ``model``; 1,024 when unknown."""
    name = (model or "").lower()
    for pattern, tokens in MIN_CACHEABLE_TABLE:
        if re.search(pattern, name):
            return tokens
    return DEFAULT_MIN_CACHEABLE


@dataclass(slots=True)
class Entry:
    ttl: str
    expires: float
    tokens: int


@dataclass
class Bill:
    """One request's bill with the positions behind it (for tests and explanations)."""

    usage: Usage
    read_at: int = -1  # block index of the entry read (-1: none)
    hits: list[int] = field(default_factory=list)  # block indexes of entries found
    written: list[int] = field(default_factory=list)  # block indexes of new entries
    total_tokens: int = 0


class PromptCache:
    """Cache entries keyed by (cache key, chain), e.g. cache key = model."""

    def __init__(self, min_cacheable: int = DEFAULT_MIN_CACHEABLE, lookback: int = LOOKBACK_BLOCKS,
                 refresh: str = "each"):
        if refresh not in REFRESH_READINGS:
            raise ValueError(f"refresh must be one of {REFRESH_READINGS}, not {refresh!r}")
        self.min_cacheable = min_cacheable
        self.lookback = int(lookback)
        self.refresh = refresh
        self.entries: dict[tuple[Hashable, Hashable], Entry] = {}
        self._bills = 0

    @classmethod
    def variant(cls, name: str = "", min_cacheable: int = DEFAULT_MIN_CACHEABLE) -> "PromptCache":
        """A cache under one reading of the undocumented behaviours: ``"lookback=12,refresh=read"``
        (either part may be left out; ValueError on anything else)."""
        opts: dict[str, str] = {}
        for part in filter(None, (p.strip() for p in name.split(","))):
            k, _, v = part.partition("=")
            if k not in ("lookback", "refresh") or not v:
                raise ValueError(f"unknown cache variant {part!r}: use lookback=N,refresh=each|read")
            opts[k] = v
        return cls(min_cacheable, int(opts.get("lookback", LOOKBACK_BLOCKS)), opts.get("refresh", "each"))

    def clear(self) -> None:
        self.entries.clear()

    def bill(self, key: Hashable, blocks: Sequence[Block], now: float, *,
             breakpoints: Mapping[int, str] | None = None, min_cacheable: int | None = None,
             dry_run: bool = False) -> Usage:
        """Bill one request and update the entries (see the module docstring)."""
        return self.bill_detail(key, blocks, now, breakpoints=breakpoints, min_cacheable=min_cacheable,
                                dry_run=dry_run).usage

    def bill_detail(self, key: Hashable, blocks: Sequence[Block], now: float, *,
                    breakpoints: Mapping[int, str] | None = None, min_cacheable: int | None = None,
                    dry_run: bool = False, also_read: int | None = None,
                    cum: Sequence[int] | None = None) -> Bill:
        """``bill`` with the positions read and written. ``breakpoints`` ({index: ttl})
        overrides the blocks' own markers (the bench moves them without copying).
        ``dry_run``: what the request would cost, leaving every entry as it was.
        ``also_read``: a block index whose entry is looked up whatever the lookback
        (the bench, where a request's real usage shows the provider read there).
        ``cum``: the blocks' running token sums (``cum[i]``: tokens before block i), when the
        caller has them (the bench shares them across its arms)."""
        if breakpoints is None:
            bps = [(i, b.breakpoint) for i, b in enumerate(blocks) if b.breakpoint]
        else:
            bps = sorted((i, t) for i, t in breakpoints.items() if t)
            if bps and not 0 <= bps[0][0] <= bps[-1][0] < len(blocks):
                raise ValueError(f"breakpoint index out of range 0..{len(blocks) - 1}: {[i for i, _ in bps]}")
        check_breakpoints([t for _, t in bps])
        floor = self.min_cacheable if min_cacheable is None else min_cacheable
        if cum is None or len(cum) != len(blocks) + 1:
            cum = _prefix_sums(blocks)
        total = cum[-1]
        self._maybe_purge(now)

        each = self.refresh == "each"
        hits: list[int] = []
        get, lookback = self.entries.get, self.lookback
        for i, _ttl in bps:
            for j in range(i, max(0, i - lookback) - 1, -1):
                entry = get((key, blocks[j].chain))
                if entry is not None and entry.expires > now:
                    if not dry_run and each:
                        entry.expires = now + TTL_SECONDS[entry.ttl]
                    hits.append(j)
                    break
        if also_read is not None and 0 <= also_read < len(blocks):
            entry = self.entries.get((key, blocks[also_read].chain))
            if entry is not None and entry.expires > now:
                if not dry_run and each:
                    entry.expires = now + TTL_SECONDS[entry.ttl]
                hits.append(also_read)
        read_at = max(hits) if hits else -1
        read = cum[read_at + 1]
        if not each and not dry_run and read_at >= 0:
            entry = self.entries[(key, blocks[read_at].chain)]
            entry.expires = now + TTL_SECONDS[entry.ttl]

        covered = read
        w5 = w1 = 0
        written: list[int] = []
        for i, ttl in bps:
            end = cum[i + 1]
            if end < floor:
                continue
            ek = (key, blocks[i].chain)
            entry = self.entries.get(ek)
            if dry_run:
                if entry is None or entry.expires <= now:
                    written.append(i)
            elif entry is not None and entry.expires > now:
                if each or i == read_at:
                    if TTL_SECONDS[ttl] > TTL_SECONDS[entry.ttl]:
                        entry.ttl = ttl
                    entry.expires = max(entry.expires, now + TTL_SECONDS[ttl])
            else:
                self.entries[ek] = Entry(ttl, now + TTL_SECONDS[ttl], end)
                written.append(i)
            if end > covered:
                if ttl == "1h":
                    w1 += end - covered
                else:
                    w5 += end - covered
                covered = end
        usage = Usage(input_tokens=total - covered, cache_write_5m=w5, cache_write_1h=w1, cache_read=read)
        return Bill(usage, read_at, hits, written, total)

    def bill_automatic(self, key: Hashable, blocks: Sequence[Block], now: float, *,
                       ttl_seconds: float = 3600.0, min_cacheable: int | None = None) -> Usage:
        """OpenAI-style automatic prefix caching: read the longest live prefix at any
        block boundary, store every boundary past the minimum (writes are free)."""
        floor = self.min_cacheable if min_cacheable is None else min_cacheable
        cum = _prefix_sums(blocks)
        self._maybe_purge(now)
        read = 0
        for j in range(len(blocks) - 1, -1, -1):
            entry = self.entries.get((key, blocks[j].chain))
            if entry is not None and entry.expires > now:
                read = cum[j + 1]
                break
        expires = now + ttl_seconds
        for j, b in enumerate(blocks):
            if cum[j + 1] >= floor:
                ek = (key, b.chain)
                entry = self.entries.get(ek)
                if entry is None:
                    self.entries[ek] = Entry(AUTO_TTL, expires, cum[j + 1])
                else:
                    entry.expires = max(entry.expires, expires)
        return Usage(input_tokens=cum[-1] - read, cache_read=read)

    def _maybe_purge(self, now: float) -> None:
        """Drop entries dead for a day (a caller may replay timelines out of order)."""
        self._bills += 1
        if self._bills % 256 == 0:
            dead = [k for k, e in self.entries.items() if e.expires <= now - 86400]
            for k in dead:
                del self.entries[k]


def _prefix_sums(blocks: Sequence[Block]) -> list[int]:
    return list(accumulate((b.tokens for b in blocks), initial=0))
