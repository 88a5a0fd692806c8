"""Routing: which upstream a request goes to, its endpoint, the proxy the client would have used.

Why apart from ``forward.py``: pure functions of a path or a URL, shared by
the forwarder and the keeper's pings (``keeper_pings.py``), testable without
a server. ``/openai/...`` goes to the OpenAI upstream with the prefix
stripped; everything else to the Anthropic upstream, the path and query as
the client wrote them.
"""

from __future__ import annotations

import urllib.request
from ipaddress import ip_address

from yarl import URL

from scalpel_desktop.wire.jsoncodec import dumps

OPENAI_PREFIX = "/openai"


def split_route(raw_path: str) -> tuple[str, str]:
    """``raw_path`` (path + query, as sent) -> (api, upstream path + query)."""
    if raw_path == OPENAI_PREFIX or raw_path.startswith((OPENAI_PREFIX + "/", OPENAI_PREFIX + "?")):
        rest = raw_path[len(OPENAI_PREFIX) :]
        if not rest.startswith("/"):
            rest = "/" + rest
        return "openai", rest
    return "anthropic", raw_path


def endpoint_of(api: str, path: str) -> str:
    p = path.rstrip("/")
    if api == "anthropic":
        if p.endswith("/messages/count_tokens"):
            return "count_tokens"
        if p.endswith("/messages"):
            return "messages"
    else:
        if p.endswith("/chat/completions"):
            return "chat"
        if p.endswith("/responses"):
            return "responses"
    return "other"


def error_body(api: str, message: str) -> bytes:
    """A 502 body in the API's own error shape, so the client's SDK parses it."""
    if api == "openai":
        return dumps({"error": {"message": message, "type": "api_error", "param": None, "code": "upstream_unreachable"}})
    return dumps({"type": "error", "error": {"type": "api_error", "message": message}})


_proxy_cache: dict[tuple[str, str], str | None] = {}


def env_proxy_for(url: URL) -> str | None:
    """The HTTP(S)_PROXY the client would have used for this upstream; never for loopback."""
    host = url.host or ""
    key = (url.scheme, host)
    if key in _proxy_cache:
        return _proxy_cache[key]
    proxy: str | None = None
    try:
        loopback = host == "localhost" or ip_address(host.strip("[]")).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        proxies = urllib.request.getproxies()
        if url.scheme in proxies and not urllib.request.proxy_bypass(host):
            proxy = proxies[url.scheme]
    _proxy_cache[key] = proxy
    return proxy
