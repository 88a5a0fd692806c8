"""A large Messages body's skeleton: what a first sighting's request path needs, without the parse.

A first sighting of a long conversation (a resume, a proxy restart, a memo
eviction) goes out as it came unless it needs a change (``pipeline/lane.py``).
Deciding that takes the conversation key, the model and the last message,
not the thousands of dicts and lists a full parse builds: at 2.9 MB that parse
is 8 ms for a body of large reads and 28 ms for one of many small messages.
``msgspec`` scans the same bytes for the top-level keys and each message's
span without building them (about 2 ms and 3.5 ms); the one or two messages
looked at are parsed alone.

The skeleton is a shortcut, never the truth: whatever it cannot read (not an
object, messages not a list, a number msgspec refuses) is None and the request
takes the usual path. It may accept a body the full parse refuses (msgspec does
not check the UTF-8 of keys it skips); such a body is forwarded as it came, as
the usual path forwards every body it cannot parse.
"""

from __future__ import annotations

from typing import Any, Mapping

import msgspec

from scalpel_desktop.wire.identity import ConversationKey, conversation_key
from scalpel_desktop.wire.jsoncodec import loads


class _Top(msgspec.Struct):
    model: Any = None
    metadata: Any = None
    prompt_cache_key: Any = None
    cache_control: Any = None
    system: Any = None
    messages: list[msgspec.Raw] | None = None


class _Role(msgspec.Struct):
    role: Any = None


class _Roles(msgspec.Struct):
    messages: list[_Role] | None = None


_DECODER = msgspec.json.Decoder(_Top)
_ROLES = msgspec.json.Decoder(_Roles)


class Skeleton:
    """The key, the model, the top-level cache settings and each message's own bytes of one Messages body."""

    __slots__ = ("key", "model", "head", "spans", "_raw")

    def __init__(self, key: ConversationKey, model: str, head: dict, spans: list[msgspec.Raw], raw: bytes):
        self.key = key
        self.model = model
        self.head = head  # metadata, prompt_cache_key, cache_control, system: as parsed
        self.spans = spans  # each message's bytes, in order
        self._raw = raw

    def __len__(self) -> int:
        return len(self.spans)

    def message(self, index: int) -> Any:
        """One message parsed alone (as the full parse would give it)."""
        return loads(memoryview(self.spans[index]))

    def roles(self) -> list[Any] | None:
        """Each message's role (a second scan of the body, done only when asked)."""
        try:
            got = _ROLES.decode(self._raw).messages
        except (msgspec.DecodeError, msgspec.ValidationError, ValueError, RecursionError):
            return None
        return [m.role for m in got] if got is not None and len(got) == len(self) else None


def read_skeleton(headers: Mapping[str, str], raw: bytes) -> Skeleton | None:
    """The skeleton of ``raw``, or None when it is not a Messages body the scan can read."""
    try:
        top = _DECODER.decode(raw)
    except (msgspec.DecodeError, msgspec.ValidationError, ValueError, RecursionError):
        return None
    if top.messages is None:
        return None
    head = {"metadata": top.metadata, "prompt_cache_key": top.prompt_cache_key}
    if top.cache_control is not None:
        head["cache_control"] = top.cache_control
    if top.system is not None:
        head["system"] = top.system
    key = conversation_key(headers, head)
    if key.source == "hash":
        # Keyed by its first user message: the messages up to that one decide it, as in the full document.
        firsts: list[Any] = []
        try:
            for span in top.messages:
                m = loads(memoryview(span))
                firsts.append(m)
                if isinstance(m, dict) and m.get("role") == "user":
                    break
        except ValueError:
            return None
        key = conversation_key(headers, dict(head, messages=firsts))
    model = top.model if isinstance(top.model, str) else ""
    return Skeleton(key, model, head, top.messages, raw)
