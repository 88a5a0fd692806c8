"""The control API, on the proxy's own port under the reserved ``/_scalpel/`` prefix.

- ``GET  /_scalpel/health``  -> ``{"ok", "version", "pid", "port"}`` (no token)
- ``GET  /_scalpel/status``  -> the runtime's snapshot (no token, no secrets)
- ``POST /_scalpel/control/<action>`` with a JSON object and
  ``Authorization: Bearer <token>`` (the per-install token file, mode 0600)

Browser defences (SPEC 8): any request to ``/_scalpel/*`` carrying an
``Origin`` header (a web page calling us) or a ``Host`` other than the
loopback address with our port (DNS rebinding) gets 403, and so does a
control request without the right token. The token is compared in constant
time and never logged.

The proxy knows its owner only through ``ControlTarget``: the runtime
implements it; this module never imports the runtime.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
from typing import Any, Protocol

from aiohttp import web

from scalpel_desktop.errors import ActionError

log = logging.getLogger("scalpel.control")

PREFIX = "/_scalpel"


class ControlTarget(Protocol):
    def health(self) -> dict[str, Any]: ...

    def status(self) -> dict[str, Any]: ...

    def token(self) -> str: ...

    def run_action(self, name: str, payload: dict[str, Any]) -> dict[str, Any]: ...


CONTROL_TARGET = web.AppKey("control_target", object)


def _json(data: Any, status: int = 200) -> web.Response:
    return web.Response(
        status=status,
        body=json.dumps(data, ensure_ascii=False).encode("utf-8"),
        content_type="application/json",
        headers={"Cache-Control": "no-store"},
    )


def _forbidden(why: str) -> web.Response:
    return _json({"ok": False, "error": f"forbidden: {why}"}, status=403)


def allowed_hosts(port: int) -> set[str]:
    return {f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}"}


def _local_port(request: web.Request) -> int | None:
    sock = request.transport.get_extra_info("sockname") if request.transport else None
    try:
        return int(sock[1]) if sock else None
    except (TypeError, ValueError, IndexError):
        return None


def browser_guard(request: web.Request) -> web.Response | None:
    """403 for a browser's cross-origin call or a rebound DNS name; None when fine."""
    if "Origin" in request.headers:
        return _forbidden("requests with an Origin header are refused")
    host = (request.headers.get("Host") or "").strip().lower()
    port = _local_port(request)
    if port is None or host not in allowed_hosts(port):
        return _forbidden("Host must be the loopback address with the proxy's port")
    return None


def _token_ok(request: web.Request, expected: str) -> bool:
    auth = request.headers.get("Authorization", "")
    scheme, _, given = auth.partition(" ")
    if scheme.lower() != "bearer" or not given or not expected:
        return False
    return hmac.compare_digest(given.strip().encode("utf-8"), expected.encode("utf-8"))


async def health(request: web.Request) -> web.Response:
    bad = browser_guard(request)
    if bad is not None:
        return bad
    return _json(request.app[CONTROL_TARGET].health())


async def status(request: web.Request) -> web.Response:
    bad = browser_guard(request)
    if bad is not None:
        return bad
    loop = asyncio.get_running_loop()
    target = request.app[CONTROL_TARGET]
    return _json(await loop.run_in_executor(None, target.status))


async def control(request: web.Request) -> web.Response:
    bad = browser_guard(request)
    if bad is not None:
        return bad
    target = request.app[CONTROL_TARGET]
    loop = asyncio.get_running_loop()
    expected = await loop.run_in_executor(None, target.token)
    if not _token_ok(request, expected):
        return _forbidden("missing or wrong control token")
    action = request.match_info["action"]
    raw = await request.read()
    try:
        payload = json.loads(raw) if raw.strip() else {}
    except ValueError:
        return _json({"ok": False, "error": "the body must be a JSON object"}, status=400)
    if not isinstance(payload, dict):
        return _json({"ok": False, "error": "the body must be a JSON object"}, status=400)
    try:
        result = await loop.run_in_executor(None, target.run_action, action, payload)
    except ActionError as e:
        return _json({"ok": False, "error": str(e)}, status=e.status)
    except ValueError as e:  # ConfigError and friends: a bad value, named
        return _json({"ok": False, "error": str(e)}, status=400)
    except Exception as e:  # noqa: BLE001
        log.exception("control action %s failed", action)
        return _json({"ok": False, "error": f"{type(e).__name__}: {e}"}, status=500)
    return _json(result if isinstance(result, dict) else {"ok": True, "result": result})


async def reserved(request: web.Request) -> web.Response:
    """Anything else under the prefix: never forwarded upstream."""
    bad = browser_guard(request)
    if bad is not None:
        return bad
    return _json({"ok": False, "error": f"unknown control path {request.path}"}, status=404)


def add_routes(app: web.Application, target: ControlTarget) -> None:
    app[CONTROL_TARGET] = target
    app.router.add_get(PREFIX + "/health", health)
    app.router.add_get(PREFIX + "/status", status)
    app.router.add_post(PREFIX + "/control/{action}", control)
    app.router.add_route("*", PREFIX + "/{tail:.*}", reserved)
