"""The provider's cache diagnosis, asked for by the proxy: opt-in, after surgery, failing open.

With the ``cache_diagnostics`` setting on, a Messages request on its way to
the Claude API (never Bedrock, Vertex AI or Foundry: ``claude_api``) gets
the beta in ``anthropic-beta`` (after the client's own betas) and
``"diagnostics": {"previous_message_id": ID}`` as the body's last member:
ID is the id of its conversation's previous answer that asked too, null on
the conversation's first such request. It is the one body change besides
the stages': made on the bytes the pipeline chose to send, after it, and
appended before the closing brace, so every byte of the cached prefix (and
every offset the surgery noted) is as the pipeline left it; the top-level
field is no part of any cache key (SPEC 3, ``wire/cache_rules.py``). The
pipeline never sees it: what it remembers is the client's body.

The answer's ``diagnostics`` (read by the usage tap, on ``message_start``
when streaming) goes to the request's ledger row (``ResponseResult.
diagnosis``; m010) and its id becomes the conversation's previous one. A
client that asks itself (its body has the field) is left alone; what the
provider names for it is recorded all the same.

Refusals: a 400 whose error names the field or the beta (an upstream
without the feature: a gateway, an API that does not know it), or a 400
this cannot read (an encoding without a decoder here) that goes away
without the additions, turns the feature off for that upstream, in
memory, with one warning in the log and a line in the status
(``cache_diagnostics.refused``); the request is sent again at once without
them, and the client gets that second answer only (a 400 bills nothing).
Turning the setting off and on again tries once more. Paused, or with no
pipeline on the request path, nothing is added: bytes as they came.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Hashable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from multidict import CIMultiDict

from scalpel_desktop import clock
from scalpel_desktop.exchange import Exchange
from scalpel_desktop.wire.cache_diagnosis import (
    FIELD, ProviderDiagnosis, claude_api, has_field, names_feature, read_diagnosis, with_beta, with_field)
from scalpel_desktop.wire.usage_tap import ABSENT, UsageTap, decoded

log = logging.getLogger("scalpel.proxy")

CONVERSATIONS_MAX = 4096  # previous answer ids kept (least recently used first out)
PEEK_BYTES = 64 * 1024  # of a 400's body, read to see whether it names the feature


@dataclass
class Ask:
    """What one request carries: the body with the field (None: the client's own field, nothing added)."""

    owner: "Diagnosis"
    upstream: str
    key: Hashable
    body: bytes | None
    previous: str | None = None
    retried: bool = False  # refused: the request went again without the additions

    def headers(self, headers: CIMultiDict[str]) -> CIMultiDict[str]:
        return CIMultiDict(with_beta(headers.items()))


class Diagnosis:
    """The proxy's state: each conversation's previous answer id, the upstreams that refused the feature."""

    def __init__(self, enabled: Callable[[], Any], limit: int = CONVERSATIONS_MAX):
        self._enabled = enabled
        self._limit = limit
        self._previous: OrderedDict[Hashable, str] = OrderedDict()
        self._refused: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()

    def on(self) -> bool:
        try:
            return bool(self._enabled())
        except Exception:  # noqa: BLE001 - a setting that cannot be read: off
            return False

    def plan(self, upstream: str, ex: Exchange, data: Any) -> Ask | None:
        """What to add to ``ex``'s request on its way to ``upstream`` (``data``: the bytes to send)."""
        if not self.on():
            self._forget()
            return None
        req = ex.request
        if (req.api != "anthropic" or req.endpoint != "messages" or not isinstance(data, bytes) or ex.key is None
                or ex.decision.action in ("error", "paused") or not claude_api(upstream, req.headers)):
            return None
        with self._lock:
            if upstream in self._refused:
                return None
            previous = self._previous.get(ex.key)
        if has_field(data, ex.doc if ex.parsed else None):
            return Ask(self, upstream, ex.key, None)
        body = with_field(data, previous)
        return Ask(self, upstream, ex.key, body, previous) if body is not None else None

    def answered(self, ask: Ask, tap: UsageTap | None, status: int) -> ProviderDiagnosis | None:
        """The answer's diagnosis for the ledger row; its id is the conversation's previous one from now."""
        if tap is None or ask.retried:
            return None
        message_id, value = tap.message()
        if ask.body is None:  # the client's own field: a reason it got is kept (a null says nothing here)
            return read_diagnosis(value) if isinstance(value, dict) else None
        if status == 200 and message_id:
            with self._lock:
                self._previous[ask.key] = message_id
                self._previous.move_to_end(ask.key)
                while len(self._previous) > self._limit:
                    self._previous.popitem(last=False)
        if ask.previous is None or value is ABSENT:
            return None  # a first turn (nothing compared), or an answer without the field's answer
        return read_diagnosis(value)

    def refuse(self, upstream: str, why: str) -> None:
        with self._lock:
            if upstream in self._refused:
                return
            self._refused[upstream] = {"reason": why[:200], "at": clock.now()}
        log.warning("cache diagnostics off for %s: %s; requests go there without them (turn the "
                    "cache_diagnostics setting off and on to try again)", _shown(upstream), why[:200])

    def status(self) -> dict[str, Any]:
        """For the runtime's status: on or off, and every upstream that refused the feature."""
        with self._lock:
            refused = {_shown(u): dict(r) for u, r in self._refused.items()}
        return {"on": self.on(), "refused": refused}

    def _forget(self) -> None:
        if self._previous or self._refused:
            with self._lock:
                self._previous.clear()
                self._refused.clear()


def ask(diagnosis: Diagnosis | None, upstream: str, ex: Exchange | None, data: Any) -> Ask | None:
    """``Diagnosis.plan``, failing open (None: send the request as the pipeline left it)."""
    if diagnosis is None or ex is None:
        return None
    try:
        return diagnosis.plan(upstream, ex, data)
    except Exception:  # noqa: BLE001
        log.exception("cache diagnostics: could not prepare a request; it goes without them")
        return None


def answered(ask: Ask | None, tap: UsageTap | None, status: int) -> ProviderDiagnosis | None:
    if ask is None:
        return None
    try:
        return ask.owner.answered(ask, tap, status)
    except Exception:  # noqa: BLE001
        log.exception("cache diagnostics: could not read an answer")
        return None


async def send(session: Any, method: str, url: Any, headers: CIMultiDict[str], data: Any, ask: Ask | None,
               **kw: Any) -> tuple[Any, bytes]:
    """The upstream's response, and the bytes of its body already read (to be sent first). Without an
    ``ask`` (or the client's own field): the request as given. With one: the additions; a refusal is
    sent again without them (``Ask.retried``)."""
    if ask is None or ask.body is None:
        return await session.request(method, url, headers=headers, data=data, **kw), b""
    up = await session.request(method, url, headers=ask.headers(headers), data=ask.body, **kw)
    if up.status != 400:
        return up, b""
    try:
        early, complete = await _peek(up)
    except Exception:  # noqa: BLE001 - a body that broke off: as unreadable
        early, complete = b"", False
    text = decoded(early, up.headers.get("Content-Encoding", "")) if complete else None
    if text is not None and not names_feature(text):
        return up, early  # the client's own 400: it gets it as it came
    up.close()
    ask.retried = True
    again = await session.request(method, url, headers=headers, data=data, **kw)
    if text is not None:
        ask.owner.refuse(ask.upstream, f"it answered 400 naming {_named(text)}")
    elif again.status != 400:
        ask.owner.refuse(ask.upstream, f"a 400 it sent ({up.headers.get('Content-Encoding', '')} body, "
                                       "unread) went away without them")
    return again, b""


async def chunks(up: Any, early: bytes) -> AsyncIterator[bytes]:
    """The response body: what ``send`` read first, then the rest as it arrives."""
    if early:
        yield early
    async for chunk in up.content.iter_any():
        yield chunk


async def _peek(up: Any) -> tuple[bytes, bool]:
    """Up to ``PEEK_BYTES`` of the body, and whether that is all of it."""
    parts, size = [], 0
    while size < PEEK_BYTES:
        part = await up.content.read(PEEK_BYTES - size)
        if not part:
            break
        parts.append(part)
        size += len(part)
    return b"".join(parts), up.content.at_eof()


def _named(text: bytes) -> str:
    return f"the {FIELD!r} field" if FIELD.encode() in text.lower() else "the beta"


def _shown(upstream: str) -> str:
    """An upstream for the log and the status: no user:password part."""
    try:
        parts = urlsplit(upstream)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
        return f"{parts.scheme}://{host}{port}{parts.path}"
    except ValueError:
        return "an upstream"
