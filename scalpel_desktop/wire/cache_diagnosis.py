"""The provider's cache diagnosis (the Claude API's ``cache-diagnosis-2026-04-07`` beta): its wire facts.

A Messages request may name an earlier response (``"diagnostics":
{"previous_message_id": "msg_..."}``, ``null`` on a conversation's first
turn); the API then compares the two requests and answers, on the message
(on ``message_start`` when streaming), where they first diverged:
``diagnostics.cache_miss_reason.type`` is one of ``REASONS``, with
``cache_missed_input_tokens`` for the ``*_changed`` ones; ``diagnostics`` is
``null`` when nothing diverged (only messages appended), and a
``cache_miss_reason`` of ``null`` means the comparison had not finished when
the answer was written. It works on the Claude API only (not Bedrock, not
Vertex AI). What the provider keeps for it, by its documentation, is a
fingerprint of each request that carried the field: hashes and token-count
estimates, never prompt content, for a limited time, scoped to the
organization and workspace (docs/proxy.md).

This module is the one home of those facts, pure: the beta's name and the
field's, the reasons, reading an answer's ``diagnostics``, adding the beta to
``anthropic-beta`` and the field to a body without touching any other byte,
knowing a refusal (a 400 naming either), and telling the Claude API from a
cloud platform's endpoint. The proxy decides when to ask
(``proxy/diagnostics.py``); the emulator answers (``emulator/diagnostics.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import msgspec

from scalpel_desktop.wire.jsoncodec import dumps

BETA = "cache-diagnosis-2026-04-07"
FIELD = "diagnostics"
BETA_HEADER = "anthropic-beta"
REASONS = ("model_changed", "system_changed", "tools_changed", "messages_changed",
           "previous_message_not_found", "unavailable")
# What the ledger says besides the provider's own reasons (``provider_miss_reason``, m010):
PENDING = "pending"  # the provider's comparison had not finished when it answered
NO_DIVERGENCE = "no_divergence"  # asked with a previous id; nothing diverged (``diagnostics: null``)
REASON_MAX = 40  # a reason the provider adds later is kept, this long at most

_WS = b" \t\r\n"
_FIELD_KEY = b'"' + FIELD.encode() + b'"'
# Cloud platforms that serve Claude without the feature (the provider's documentation: Claude API only).
_CLOUD_HOSTS = ("amazonaws.com", "googleapis.com", "azure.com", "azure.net")
_CLOUD_HINTS = ("bedrock", "aiplatform", "vertex")


@dataclass(frozen=True)
class ProviderDiagnosis:
    """What the provider said of one request: a reason (``REASONS``, ``PENDING`` or ``NO_DIVERGENCE``) and,
    for a ``*_changed`` reason, its estimate of the input tokens that would have been read had the prefix
    matched the previous request."""

    reason: str
    missed_tokens: int | None = None


def read_diagnosis(value: Any) -> ProviderDiagnosis | None:
    """An answer's ``diagnostics`` value as a diagnosis: ``null`` is ``NO_DIVERGENCE``, a null reason
    ``PENDING``; None for anything that is not the documented shape."""
    if value is None:
        return ProviderDiagnosis(NO_DIVERGENCE)
    if not isinstance(value, Mapping):
        return None
    reason = value.get("cache_miss_reason")
    if reason is None:
        return ProviderDiagnosis(PENDING)
    if not isinstance(reason, Mapping) or not isinstance(reason.get("type"), str) or not reason["type"]:
        return None
    tokens = reason.get("cache_missed_input_tokens")
    ok = isinstance(tokens, int) and not isinstance(tokens, bool) and tokens >= 0
    return ProviderDiagnosis(reason["type"][:REASON_MAX], tokens if ok else None)


# -- the request ---------------------------------------------------------------


def has_beta(headers: Mapping[str, str] | Iterable[tuple[str, str]]) -> bool:
    """Does any ``anthropic-beta`` header already list the beta?"""
    items = headers.items() if isinstance(headers, Mapping) else headers
    return any(name.lower() == BETA_HEADER and BETA in _betas(value) for name, value in items)


def with_beta(pairs: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """The headers with the beta among the ``anthropic-beta`` values, listed once: appended to the client's
    last ``anthropic-beta`` header (its own betas first, as it wrote them), or a header of its own. Every
    other header is kept as it was, in its place."""
    pairs = list(pairs)
    if has_beta(pairs):
        return pairs
    last = max((i for i, (name, _) in enumerate(pairs) if name.lower() == BETA_HEADER), default=None)
    if last is None:
        return pairs + [(BETA_HEADER, BETA)]
    name, value = pairs[last]
    joined = f"{value.rstrip().rstrip(',')},{BETA}" if value.strip().strip(",") else BETA
    return pairs[:last] + [(name, joined)] + pairs[last + 1:]


def _betas(value: str) -> list[str]:
    return [b.strip() for b in value.split(",")]


class _Top(msgspec.Struct):
    diagnostics: Any = msgspec.UNSET


_TOP = msgspec.json.Decoder(_Top)


def has_field(body: bytes, doc: Any = None) -> bool:
    """Does the body carry a top-level ``diagnostics`` of its own (the client asks for itself)? ``doc``: the
    parsed body, when the caller has it. A body the scan cannot read counts as having one (left alone)."""
    if isinstance(doc, Mapping):
        return FIELD in doc
    if _FIELD_KEY not in body:
        return False
    try:
        return _TOP.decode(body).diagnostics is not msgspec.UNSET
    except (msgspec.DecodeError, msgspec.ValidationError, ValueError, RecursionError):
        return True


def field_bytes(previous_id: str | None) -> bytes:
    """The member added: ``"diagnostics":{"previous_message_id":ID}`` (ID null on a first turn)."""
    return _FIELD_KEY + b":" + dumps({"previous_message_id": previous_id})


def with_field(body: bytes, previous_id: str | None) -> bytes | None:
    """``body`` with the field as its last member, put before the object's closing brace: every byte
    of the body kept, in order. None when the body is not a JSON object (nothing is added)."""
    end = len(body)
    while end and body[end - 1] in _WS:
        end -= 1
    start = 0
    while start < end and body[start] in _WS:
        start += 1
    if end - start < 2 or body[start] != 0x7B or body[end - 1] != 0x7D:  # "{" ... "}"
        return None
    before = end - 2
    while before > start and body[before] in _WS:
        before -= 1
    sep = b"" if before == start else b","  # an empty object takes no comma
    return body[:end - 1] + sep + field_bytes(previous_id) + body[end - 1:]


# -- the answer ----------------------------------------------------------------


def names_feature(error_body: bytes) -> bool:
    """Does a 400's body name the field or the beta (an upstream without the feature refusing it)?"""
    low = error_body.lower()
    return _FIELD_KEY[1:-1] in low or BETA.encode() in low


# -- where --------------------------------------------------------------------


def claude_api(upstream: str, headers: Mapping[str, str]) -> bool:
    """Is this request on its way to the Claude API (the feature's only platform)? Not when the upstream's
    host is a cloud platform's (Bedrock, Vertex AI, Foundry) or the request is signed for one (AWS SigV4,
    Google's headers); a Claude API request states its ``anthropic-version``. ``headers``: lower-cased names."""
    host = (urlsplit(upstream).hostname or "").lower()
    if not host or host.endswith(_CLOUD_HOSTS) or any(h in host for h in _CLOUD_HINTS):
        return False
    if "anthropic-version" not in headers:
        return False
    auth = headers.get("authorization", "")
    if auth.upper().startswith("AWS4-") or any(k.startswith(("x-amz-", "x-goog-")) for k in headers):
        return False
    return True
