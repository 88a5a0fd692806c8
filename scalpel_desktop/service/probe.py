"""Is a scalpel proxy answering on a port? (stdlib only: hooks and the statusline use it)."""

from __future__ import annotations

import http.client
import json
import time


def health(port: int, timeout: float = 1.0) -> dict | None:
    """The proxy's ``/_scalpel/health`` answer on 127.0.0.1:port, or None."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", "/_scalpel/health", headers={"Host": f"127.0.0.1:{port}"})
        resp = conn.getresponse()
        body = resp.read()
        if resp.status != 200:
            return None
        doc = json.loads(body)
        return doc if isinstance(doc, dict) and doc.get("ok") else None
    except (OSError, ValueError, http.client.HTTPException):
        return None
    finally:
        conn.close()


def wait_healthy(port: int, timeout: float, still_starting=lambda: True) -> dict | None:
    """Poll until the proxy answers, ``timeout`` passes, or ``still_starting()`` says give up."""
    deadline = time.monotonic() + timeout
    while True:
        doc = health(port, timeout=1.0)
        if doc is not None:
            return doc
        if time.monotonic() >= deadline or not still_starting():
            return None
        time.sleep(0.1)


def base_url(port: int) -> str:
    return f"http://127.0.0.1:{port}"


def is_scalpel_url(url: object, port: int | None = None) -> bool:
    """True for a loopback URL on scalpel's port (any port when ``port`` is None and it answers like scalpel)."""
    if not isinstance(url, str):
        return False
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        host, p = parts.hostname, parts.port
    except ValueError:
        return False
    if host not in ("127.0.0.1", "localhost", "::1"):
        return False
    if port is not None:
        return p == port
    return p is not None and health(p, timeout=0.5) is not None
