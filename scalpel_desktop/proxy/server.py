"""The proxy's aiohttp app and the thread it runs in.

``build_app`` composes the routes: the control API under ``/_scalpel/`` and
everything else forwarded. ``ProxyServer`` is the shared ``AppThread``
(proxy/app_thread.py: own thread and loop, bounded thread-safe stop, crash
reported through ``on_exit``) with the proxy's options: a short
``shutdown_timeout`` (a stop never waits on a 10-minute stream), handler
cancellation on client disconnect (so the upstream call is cancelled too),
request decompression off (bodies are forwarded as they came), 127.0.0.1
only, and a taken port raised as ``PortInUse`` naming the holder.
"""

from __future__ import annotations

import errno
from typing import Any, Callable

from aiohttp import web

from scalpel_desktop.proxy import control
from scalpel_desktop.proxy.app_thread import HOST, AppThread
from scalpel_desktop.proxy.forward import OPTIONS, ProxyOptions, forward, upstream_session_ctx
from scalpel_desktop.proxy.portcheck import port_in_use_error
from scalpel_desktop.proxy.trim import Trimmer

SHUTDOWN_TIMEOUT_S = 0.5


def build_app(options: ProxyOptions, target: control.ControlTarget | None = None) -> web.Application:
    # client_max_size: the body limit is ours (forward.py streams big bodies); aiohttp's own
    # 1 MB check only applies to request.read()/post(), which forward calls within our bound.
    middlewares = [trimming(options.trimmer)] if options.trimmer is not None else []
    app = web.Application(client_max_size=1 << 62, handler_args={"max_field_size": 65536},
                          middlewares=middlewares)
    app[OPTIONS] = options
    app.cleanup_ctx.append(upstream_session_ctx)
    if target is not None:
        control.add_routes(app, target)
    app.router.add_route("*", "/{tail:.*}", forward)
    return app


def trimming(trimmer: Trimmer) -> Any:
    """A middleware that counts requests in flight and their bytes for ``trimmer``."""

    @web.middleware
    async def count(request: web.Request, handler: Any) -> web.StreamResponse:
        trimmer.started()
        try:
            return await handler(request)
        finally:
            trimmer.finished(request.content_length or 0)

    return count


class ProxyServer(AppThread):
    """One running proxy: the shared app thread with the proxy's runner options."""

    def __init__(
        self,
        app_factory: Callable[[], web.Application],
        port: int,
        host: str = HOST,
        on_exit: Callable[[BaseException | None], None] | None = None,
    ):
        super().__init__(
            app_factory, port, host,
            label="the proxy",
            name=f"scalpel-proxy-{port}",
            shutdown_timeout=SHUTDOWN_TIMEOUT_S,
            runner_options={"handler_cancellation": True, "auto_decompress": False},
            bind_error=lambda e: _port_in_use(e, port, host),
            on_exit=on_exit,
        )


def _port_in_use(e: OSError, port: int, host: str) -> BaseException | None:
    if e.errno in (errno.EADDRINUSE, getattr(errno, "WSAEADDRINUSE", -1)):
        return port_in_use_error(port, host)
    return None
