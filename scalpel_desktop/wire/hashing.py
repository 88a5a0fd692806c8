"""The one per-message hash rule: what makes two messages "the same" for the cache.

The economist compares requests message by message. Its hash of a message is
sha256 (16 bytes) of the message's compact JSON (``wire.jsoncodec.dumps``)
with every ``cache_control`` key removed (markers are not content), and, for
an Anthropic message, a string ``content`` treated as the one text block it
stands for (the last message flips between the two as its marker moves).
Regions that break the cache when they change (system, tools, settings) hash
the same canonical bytes, in hex.

The conversation views (``wire/view.py``) and the surgery's fast path (which
has no view, only the raw bytes: ``wire/layout.py``) both hash through here:
they must agree byte for byte, or the economist sees client rewrites that
never happened.
"""

from __future__ import annotations

import hashlib
from typing import Any

from scalpel_desktop.wire.jsoncodec import dumps

_MARKER = b'"cache_control"'


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def strip_cache_control(obj: Any) -> Any:
    """A copy without any ``cache_control`` key on dicts (markers are not content)."""
    if isinstance(obj, dict):
        return {k: strip_cache_control(v) for k, v in obj.items() if k != "cache_control"}
    if isinstance(obj, list):
        return [strip_cache_control(v) for v in obj]
    return obj


def canonical_bytes(obj: Any, data: bytes | None = None) -> bytes:
    """Compact bytes of ``obj`` with cache markers removed; fast when it has none.
    ``data``: ``dumps(obj)`` when the caller has it already."""
    if data is None:
        data = dumps(obj)
    if _MARKER in data:
        data = dumps(strip_cache_control(obj))
    return data


def digest(data: bytes) -> bytes:
    """The 16-byte digest of canonical bytes."""
    return hashlib.sha256(data).digest()[:16]


def unit_digest(obj: Any, canonical: Any = None) -> bytes:
    """16-byte digest of one unit's canonical bytes (cache markers excluded).

    ``canonical``: the unit as its format reads it (``as_blocks``), when it
    differs from ``obj``. Computed per view and memoised there; no
    cross-request cache keyed by object identity, because a caller that
    mutates a message in place would then be handed a stale digest.
    """
    return digest(canonical_bytes(obj if canonical is None else canonical))


def as_blocks(message: Any) -> Any:
    """An Anthropic message with a string ``content`` as the one text block it stands
    for; None when the message has no string content (it hashes as it is)."""
    if isinstance(message, dict) and isinstance(message.get("content"), str):
        return {k: ([{"type": "text", "text": v}] if k == "content" else v) for k, v in message.items()}
    return None


def message_hash(message: Any, data: bytes | None = None) -> bytes:
    """The economist's hash of one Anthropic message (``data``: its compact bytes, when known)."""
    blocks = as_blocks(message)
    if blocks is not None:
        return digest(canonical_bytes(blocks))
    return digest(canonical_bytes(message, data))


def region_hash(obj: Any) -> str:
    """Hash of a cache-breaking region (system, tools, settings), markers excluded."""
    return sha(canonical_bytes(obj))
