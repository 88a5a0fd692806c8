"""Which headers cross the proxy, both ways.

Hop-by-hop headers (RFC 9110 section 7.6.1) describe one connection, not the
message: they are dropped in both directions, together with any header the
``Connection`` header names. ``Host`` and ``Content-Length`` are recomputed
by aiohttp for the upstream request (the body may be a changed one), and
``Expect`` was already answered by the proxy itself.
Everything else, credentials included (``x-api-key``, ``authorization``),
is forwarded untouched and never stored.

``Content-Encoding`` is kept both ways: request bodies with an encoding are
forwarded as they came (never parsed), and the upstream session runs with
``auto_decompress=False``, so a compressed answer reaches the client as the
exact bytes the upstream sent, with the header that describes them.
"""

from __future__ import annotations

from typing import Iterable, Mapping

from multidict import CIMultiDict

HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "trailers",
        "transfer-encoding",
        "upgrade",
    }
)

# Recomputed by the HTTP client for the upstream request. ``Expect: 100-continue`` was
# answered by our own server before the body was read: the upstream gets the whole body.
_REQUEST_RECOMPUTED = frozenset({"host", "content-length", "expect"})


def _connection_tokens(headers: Mapping[str, str] | Iterable[tuple[str, str]]) -> set[str]:
    items = headers.items() if hasattr(headers, "items") else headers
    named: set[str] = set()
    for name, value in items:
        if name.lower() == "connection":
            named.update(t.strip().lower() for t in value.split(",") if t.strip())
    return named


def _filtered(pairs: Iterable[tuple[str, str]], drop: frozenset[str] | set[str]) -> CIMultiDict[str]:
    pairs = list(pairs)
    named = _connection_tokens(pairs)
    out: CIMultiDict[str] = CIMultiDict()
    for name, value in pairs:
        low = name.lower()
        if low in drop or low in named:
            continue
        out.add(name, value)
    return out


def upstream_request_headers(pairs: Iterable[tuple[str, str]]) -> CIMultiDict[str]:
    """The client's headers as they go upstream (order and duplicates kept)."""
    return _filtered(pairs, HOP_BY_HOP | _REQUEST_RECOMPUTED)


def client_response_headers(pairs: Iterable[tuple[str, str]], *, keep_length: bool) -> CIMultiDict[str]:
    """The upstream's headers as they go back to the client.

    ``Content-Length`` is kept only when the body passes through unchanged and
    unchunked (``keep_length``); otherwise aiohttp frames the body itself.
    """
    drop = set(HOP_BY_HOP)
    if not keep_length:
        drop.add("content-length")
    return _filtered(pairs, drop)
