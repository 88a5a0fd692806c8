"""Requests as cacheable blocks: the prefix hashing behind ``accounting.cache_model``.

A request becomes a list of ``Block`` s in prefix order tools -> system ->
messages; each block's ``chain`` hashes the whole prefix through it (section
and message boundaries, roles and the settings salt included; ``cache_control``
excluded). ``PrefixBuilder`` appends without rehashing history, so the bench
can extend one conversation turn after turn. See ``cache_model`` for the rules.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, replace
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import Any

from scalpel_desktop.accounting.tokens import canonical_block
from scalpel_desktop.wire.api_rules import CacheControlError
from scalpel_desktop.wire.cache_rules import CACHE_TTLS, MESSAGE_CACHE_SETTINGS
from scalpel_desktop.wire.jsoncodec import dumps



@dataclass(frozen=True, slots=True)
class Block:
    """One cacheable unit: ``chain`` hashes the prefix through this block."""

    chain: Hashable
    tokens: int
    breakpoint: str | None = None  # None | "5m" | "1h"


def ttl_of(cache_control: Any) -> str:
    ttl = cache_control.get("ttl", "5m") if isinstance(cache_control, Mapping) else "5m"
    if ttl not in CACHE_TTLS:
        raise CacheControlError(f"cache_control.ttl: Input should be '5m' or '1h' (got {ttl!r})")
    return ttl


def with_breakpoints(blocks: Sequence[Block], marks: Mapping[int, str | None]) -> list[Block]:
    """A copy of ``blocks`` with the markers at the given indexes replaced."""
    out = list(blocks)
    for i, ttl in marks.items():
        out[i] = replace(out[i], breakpoint=ttl)
    return out


# --------------------------------------------------------------------------- building blocks

_SECTION_SYSTEM = b"\x00system"
_SECTION_MESSAGES = b"\x00messages"


def _digest(prev: bytes, tag: bytes, payload: bytes) -> bytes:
    h = hashlib.blake2b(prev, digest_size=16)
    h.update(tag)
    h.update(len(payload).to_bytes(8, "little"))
    h.update(payload)
    return h.digest()


def _rule_count(raw: bytes) -> int:
    return math.ceil(len(raw) / 4)


class PrefixBuilder:
    """Builds the block list of a request incrementally.

    Appending a message hashes only that message: the bench extends one
    builder turn after turn (``copy()`` forks it in O(n) without rehashing).
    ``count`` maps a block (``cache_control`` stripped) to its tokens; the
    default is the emulator's rule (ceil(compact JSON bytes / 4)).
    """

    __slots__ = ("blocks", "_chain", "_pending", "_section", "_count")

    def __init__(self, count: Callable[[Any], int] | None = None):
        self.blocks: list[Block] = []
        self._chain = b""
        self._pending = b""
        self._section = 0  # 0 tools, 1 system, 2 messages
        self._count = count

    def copy(self) -> "PrefixBuilder":
        other = PrefixBuilder(self._count)
        other.blocks = list(self.blocks)
        other._chain, other._pending, other._section = self._chain, self._pending, self._section
        return other

    @property
    def total_tokens(self) -> int:
        return sum(b.tokens for b in self.blocks)

    # sections -------------------------------------------------------------
    def _enter(self, section: int, tag: bytes) -> None:
        if section < self._section:
            raise ValueError("blocks must be added in the order tools -> system -> messages")
        if section > self._section:
            self._pending += tag
            self._section = section

    def add_tool(self, decl: Any, *, tokens: int | None = None, breakpoint: str | None | bool = True) -> Block:
        """One tool declaration. ``breakpoint=True`` takes it from its cache_control."""
        self._enter(0, b"")
        return self._append(decl, tokens, breakpoint)

    def add_system(self, system: Any, *, tokens: Sequence[int] | None = None) -> list[Block]:
        """The system prompt: a string is one text block, a list is one block each."""
        self._enter(1, _SECTION_SYSTEM)
        if system is None:
            return []
        items = [{"type": "text", "text": system}] if isinstance(system, str) else list(system)
        return [self._append(b, tokens[k] if tokens else None, True) for k, b in enumerate(items)]

    def start_messages(self, settings: Mapping[str, Any] | None = None) -> None:
        """Enter the messages section, salting the chain with the settings that
        invalidate the messages' cache (``wire/cache_rules.MESSAGE_CACHE_SETTINGS``)."""
        if self._section == 2:
            return
        salt = dumps({k: (settings or {}).get(k) for k in MESSAGE_CACHE_SETTINGS})
        self._enter(2, _SECTION_MESSAGES + salt)

    def add_message(self, role: str, content: Any, *, tokens: Sequence[int] | None = None,
                    breakpoints: bool = True) -> list[Block]:
        """One message: a role boundary, then one block per content block."""
        if self._section != 2:
            self.start_messages(None)
        self._pending += b"\x00msg:" + str(role).encode()
        if isinstance(content, str):
            items: Iterable[Any] = [{"type": "text", "text": content}]
        elif isinstance(content, list):
            items = content
        else:
            items = [content] if content is not None else []
        return [self._append(b, tokens[k] if tokens else None, breakpoints) for k, b in enumerate(items)]

    def add_raw(self, payload: bytes, tokens: int, breakpoint: str | None = None,
                new_message_role: str | None = None) -> Block:
        """A block given by its own bytes/hash and token count (the bench's units)."""
        if new_message_role is not None:
            if self._section != 2:
                self.start_messages(None)
            self._pending += b"\x00msg:" + new_message_role.encode()
        block = self._make(payload, tokens, breakpoint)
        return block

    # internals ------------------------------------------------------------
    def _append(self, item: Any, tokens: int | None, breakpoint: str | None | bool) -> Block:
        canon = canonical_block(item)
        raw = dumps(canon)
        if breakpoint is True:
            cc = item.get("cache_control") if isinstance(item, dict) else None
            bp = ttl_of(cc) if cc is not None else None
        elif breakpoint is False:
            bp = None
        else:
            bp = breakpoint
        if tokens is None:
            tokens = self._count(canon) if self._count else _rule_count(raw)
        return self._make(raw, tokens, bp)

    def _make(self, payload: bytes, tokens: int, bp: str | None) -> Block:
        self._chain = _digest(self._chain, self._pending, payload)
        self._pending = b""
        block = Block(self._chain.hex(), tokens, bp)
        self.blocks.append(block)
        return block


def builder_for(body: Mapping[str, Any], count: Callable[[Any], int] | None = None) -> PrefixBuilder:
    """A builder holding the blocks of an Anthropic Messages body."""
    pb = PrefixBuilder(count)
    for tool in body.get("tools") or []:
        if isinstance(tool, Mapping) and tool.get("defer_loading") is True:
            continue  # tool search: not rendered in the prefix until a tool_reference loads it
        pb.add_tool(tool)
    pb.add_system(body.get("system"))
    pb.start_messages(body)
    for msg in body.get("messages") or []:
        if isinstance(msg, Mapping):
            pb.add_message(msg.get("role", ""), msg.get("content"))
    auto = body.get("cache_control")
    if auto is not None and pb.blocks:
        ttl = ttl_of(auto)
        last = pb.blocks[-1]
        if last.breakpoint is None:
            pb.blocks[-1] = replace(last, breakpoint=ttl)
    return pb


def request_blocks(body: Mapping[str, Any], count: Callable[[Any], int] | None = None) -> list[Block]:
    """The blocks of an Anthropic Messages body: tools -> system -> messages, with
    breakpoints from the ``cache_control`` markers (a top-level one marks the last block)."""
    return builder_for(body, count).blocks


def openai_blocks(body: Mapping[str, Any], count: Callable[[Any], int] | None = None) -> list[Block]:
    """Blocks of an OpenAI Chat or Responses body: tools, then instructions, then one
    block per message / input item (automatic caching needs no markers)."""
    pb = PrefixBuilder(count)
    for tool in body.get("tools") or []:
        pb.add_tool(tool, breakpoint=False)
    instructions = body.get("instructions")
    pb.add_system(instructions if isinstance(instructions, str) and instructions else None)
    pb.start_messages(body)
    items = body.get("messages")
    if items is None:
        items = body.get("input")
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]
    for item in items or []:
        role = (item.get("role") or item.get("type") or "") if isinstance(item, Mapping) else ""
        pb.add_message(str(role), [item], breakpoints=False)
    return pb.blocks
