"""Hop-by-hop headers never cross; everything else, credentials included, does, in order."""

from __future__ import annotations

from scalpel_desktop.proxy.headers import client_response_headers, upstream_request_headers


def test_request_headers_drop_hop_by_hop_and_connection_named():
    pairs = [
        ("Host", "127.0.0.1:4242"),
        ("Connection", "keep-alive, X-Per-Hop"),
        ("X-Per-Hop", "1"),
        ("Keep-Alive", "timeout=5"),
        ("Transfer-Encoding", "chunked"),
        ("Content-Length", "12"),
        ("Proxy-Authorization", "Basic abc"),
        ("TE", "trailers"),
        ("Upgrade", "h2c"),
        ("x-api-key", "sk-ant-secret"),
        ("Authorization", "Bearer sk-secret"),
        ("anthropic-beta", "a"),
        ("anthropic-beta", "b"),
        ("Accept-Encoding", "gzip, br"),
        ("Content-Type", "application/json"),
    ]
    out = upstream_request_headers(pairs)
    assert list(out.items()) == [
        ("x-api-key", "sk-ant-secret"),
        ("Authorization", "Bearer sk-secret"),
        ("anthropic-beta", "a"),
        ("anthropic-beta", "b"),
        ("Accept-Encoding", "gzip, br"),
        ("Content-Type", "application/json"),
    ]


def test_response_headers_keep_encoding_and_length_only_when_asked():
    pairs = [
        ("Content-Type", "text/event-stream"),
        ("Content-Encoding", "gzip"),
        ("Content-Length", "100"),
        ("Transfer-Encoding", "chunked"),
        ("Connection", "close"),
        ("request-id", "req_1"),
        ("anthropic-ratelimit-tokens-remaining", "1000"),
    ]
    kept = client_response_headers(pairs, keep_length=True)
    assert "Content-Length" in kept and "Content-Encoding" in kept and "Transfer-Encoding" not in kept
    assert "Connection" not in kept and kept["request-id"] == "req_1"
    assert "Content-Length" not in client_response_headers(pairs, keep_length=False)
