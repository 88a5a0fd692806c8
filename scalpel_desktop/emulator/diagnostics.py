"""The emulator's side of the provider's cache diagnosis (``wire/cache_diagnosis.py``): the contract, answered.

With the beta in ``anthropic-beta``, every Messages request's structural
fingerprint is kept under its answer's id: the model, a running hash after
each tool declaration (deferred ones are no part of the prefix) and each
system block, a hash of the settings that salt the message cache
(``wire/cache_rules.MESSAGE_CACHE_SETTINGS``), and a running hash after each
message (its role and its blocks as the cache sees them: ``cache_control``
left out, a string the same as one text block), each with its tokens by the
emulator's rule. Hashes and counts only, never content, as the provider
documents its own.

A request that carries ``diagnostics.previous_message_id`` gets
``diagnostics`` on its message (on ``message_start`` when streaming; both are
built from one message dict): the first divergence from the named request,
in prefix order. ``model_changed``, ``tools_changed``, ``system_changed``,
then ``unavailable`` for a settings change (the SDK's documentation: model,
system and tools match, another prompt-affecting parameter does not), then
``messages_changed`` when an earlier message differs (or is gone);
``cache_missed_input_tokens`` is the named request's tokens from the
divergence on (what it had that this one cannot read). Only messages
appended: ``null``. An unknown id: ``previous_message_not_found``. A null id
(a first turn): ``null``, and the fingerprint is kept.

Modes (``Emulator(cache_diagnosis=...)``, ``POST /_emulator/diagnosis``):
``beta`` (the default) as documented, and a body carrying ``diagnostics``
without the beta gets the API's unknown-field 400 naming it; ``unknown_beta``
an upstream that does not know the beta (a 400 naming it, whether or not the
body carries the field); ``unknown_field`` one that drops the beta header on
the way (the field is then an unknown field). The last two show the proxy's
retry path. The field is no part of any cache key (the bill ignores it).
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scalpel_desktop.accounting.tokens import canonical_block
from scalpel_desktop.wire.api_rules import bad
from scalpel_desktop.wire.cache_diagnosis import BETA, FIELD, has_beta
from scalpel_desktop.wire.cache_rules import MESSAGE_CACHE_SETTINGS
from scalpel_desktop.wire.jsoncodec import dumps

MODES = ("beta", "unknown_beta", "unknown_field")
KEEP = 4096  # fingerprints kept, the oldest first out (the provider keeps its own "for a limited time")
UNKNOWN_BETA = (f"Unexpected value(s) `{BETA}` for the `anthropic-beta` header. Please consult our "
                "documentation at docs.claude.com or try again without the header.")
PREVIOUS_FIELD = "previous_message_id"


@dataclass(frozen=True)
class Section:
    """A running hash after each unit (tool, system block, message) and each unit's tokens."""

    hashes: tuple[bytes, ...] = ()
    tokens: tuple[int, ...] = ()

    def first_difference(self, other: "Section", appended_ok: bool) -> int | None:
        """The first unit of ``self`` that ``other`` does not repeat; None when it repeats them all (and,
        unless ``appended_ok``, has no more)."""
        for i, h in enumerate(self.hashes):
            if i >= len(other.hashes) or other.hashes[i] != h:
                return i
        if not appended_ok and len(other.hashes) != len(self.hashes):
            return len(self.hashes)
        return None

    def tokens_from(self, i: int) -> int:
        return sum(self.tokens[i:])


@dataclass(frozen=True)
class Fingerprint:
    model: str
    tools: Section
    system: Section
    settings: bytes
    messages: Section

    @property
    def total(self) -> int:
        return self.tools.tokens_from(0) + self.system.tokens_from(0) + self.messages.tokens_from(0)


def _digest(*parts: bytes) -> bytes:
    h = hashlib.blake2b(digest_size=16)
    for part in parts:
        h.update(len(part).to_bytes(8, "little"))
        h.update(part)
    return h.digest()


def _blocks(content: Any) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return content
    return [] if content is None else [content]


def _section(units: list[tuple[bytes, list[Any]]]) -> Section:
    """``units``: (a tag such as a message's role, its blocks) each."""
    running, hashes, tokens = b"", [], []
    for tag, blocks in units:
        raws = [dumps(canonical_block(b)) for b in blocks]
        running = _digest(running, tag, *raws)
        hashes.append(running)
        tokens.append(sum(-(-len(r) // 4) for r in raws))  # the emulator's rule: ceil(bytes / 4)
    return Section(tuple(hashes), tuple(tokens))


def fingerprint(body: Mapping[str, Any]) -> Fingerprint:
    tools = [t for t in body.get("tools") or [] if not (isinstance(t, Mapping) and t.get("defer_loading") is True)]
    system = body.get("system")
    messages = [m for m in body.get("messages") or [] if isinstance(m, Mapping)]
    return Fingerprint(
        model=str(body.get("model")),
        tools=_section([(b"tool", [t]) for t in tools]),
        system=_section([(b"system", [b]) for b in _blocks(system)]),
        settings=_digest(dumps({k: body.get(k) for k in MESSAGE_CACHE_SETTINGS})),
        messages=_section([(str(m.get("role", "")).encode(), _blocks(m.get("content"))) for m in messages]),
    )


def compare(prev: Fingerprint, cur: Fingerprint) -> dict[str, Any] | None:
    """The ``diagnostics`` value for ``cur`` named after ``prev``: the first divergence, or None."""
    if prev.model != cur.model:
        return _reason("model_changed", prev.total)
    i = prev.tools.first_difference(cur.tools, appended_ok=False)
    if i is not None:
        return _reason("tools_changed", prev.tools.tokens_from(i) + prev.system.tokens_from(0)
                       + prev.messages.tokens_from(0))
    i = prev.system.first_difference(cur.system, appended_ok=False)
    if i is not None:
        return _reason("system_changed", prev.system.tokens_from(i) + prev.messages.tokens_from(0))
    if prev.settings != cur.settings:
        return {"cache_miss_reason": {"type": "unavailable"}}
    i = prev.messages.first_difference(cur.messages, appended_ok=True)
    if i is not None:
        return _reason("messages_changed", prev.messages.tokens_from(i))
    return None


def _reason(kind: str, tokens: int) -> dict[str, Any]:
    return {"cache_miss_reason": {"type": kind, "cache_missed_input_tokens": int(tokens)}}


@dataclass(frozen=True)
class Asked:
    """What one request asked: the beta on (its fingerprint is kept), the field given, the id named."""

    on: bool = False
    field: bool = False
    previous: str | None = None


class Diagnosis:
    """Thread-safe: the server's handlers run on its loop, tests switch the mode from theirs."""

    def __init__(self, mode: str = "beta", keep: int = KEEP):
        self.mode = mode
        self._keep = keep
        self._prints: OrderedDict[str, Fingerprint] = OrderedDict()
        self._lock = threading.Lock()
        check_mode(mode)

    def set_mode(self, mode: str) -> None:
        self.mode = check_mode(mode)

    def check(self, headers: Any, body: Mapping[str, Any]) -> Asked:
        """What the request asks; raises the API's 400 for what this mode refuses."""
        beta = has_beta(headers)
        if beta and self.mode == "unknown_beta":
            raise bad(UNKNOWN_BETA)
        on = beta and self.mode == "beta"
        if FIELD not in body:
            return Asked(on)
        if not on:
            raise bad(f"{FIELD}: Extra inputs are not permitted")
        value = body[FIELD]
        if not isinstance(value, Mapping):
            raise bad(f"{FIELD}: Input should be a valid dictionary or object to extract fields from")
        for key in value:
            if key != PREVIOUS_FIELD:
                raise bad(f"{FIELD}.{key}: Extra inputs are not permitted")
        previous = value.get(PREVIOUS_FIELD)
        if previous is not None and not isinstance(previous, str):
            raise bad(f"{FIELD}.{PREVIOUS_FIELD}: Input should be a valid string")
        return Asked(True, True, previous)

    def answer(self, asked: Asked, body: Mapping[str, Any], message: dict[str, Any]) -> None:
        """Put ``diagnostics`` on ``message`` when asked; keep the request's fingerprint under its id."""
        if not asked.on:
            return
        fp = fingerprint(body)
        with self._lock:
            prev = self._prints.get(asked.previous) if asked.previous is not None else None
            self._prints[message["id"]] = fp
            while len(self._prints) > self._keep:
                self._prints.popitem(last=False)
        if not asked.field:
            return
        if asked.previous is None:
            message[FIELD] = None
        elif prev is None:
            message[FIELD] = {"cache_miss_reason": {"type": "previous_message_not_found"}}
        else:
            message[FIELD] = compare(prev, fp)

    def clear(self) -> None:
        with self._lock:
            self._prints.clear()


def check_mode(mode: str) -> str:
    if mode not in MODES:
        raise ValueError(f"unknown cache diagnosis mode {mode!r}; known: {', '.join(MODES)}")
    return mode

