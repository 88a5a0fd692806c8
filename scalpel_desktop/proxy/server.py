"""The aiohttp app and the thread it runs in.

``build_app`` composes the routes: the control API under ``/_scalpel/`` and
everything else forwarded. ``ProxyServer`` runs it with ``AppRunner`` +
``TCPSite`` in a thread with its own event loop (aiohttp web_advanced):
``handle_signals=False`` (the frontend owns the signals), a short
``shutdown_timeout`` (a stop never waits on a 10-minute stream), handler
cancellation on client disconnect (so the upstream call is cancelled too),
request decompression off (bodies are forwarded as they came). Bound to
127.0.0.1 only. ``start()`` returns once the socket is bound or raises
``PortInUse`` naming the holder; ``stop()`` is thread-safe
(``call_soon_threadsafe``) and bounded. A loop that ends without being asked
to is a crash: ``on_exit`` tells the owner, which may restart it.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import threading
from typing import Callable

from aiohttp import web

from scalpel_desktop.proxy import control
from scalpel_desktop.proxy.forward import OPTIONS, ProxyOptions, forward, upstream_session_ctx
from scalpel_desktop.proxy.portcheck import port_in_use_error

log = logging.getLogger("scalpel.proxy")

HOST = "127.0.0.1"
SHUTDOWN_TIMEOUT_S = 0.5


def build_app(options: ProxyOptions, target: control.ControlTarget | None = None) -> web.Application:
    # client_max_size: the body limit is ours (forward.py streams big bodies); aiohttp's own
    # 1 MB check only applies to request.read()/post(), which forward calls within our bound.
    app = web.Application(client_max_size=1 << 62, handler_args={"max_field_size": 65536})
    app[OPTIONS] = options
    app.cleanup_ctx.append(upstream_session_ctx)
    if target is not None:
        control.add_routes(app, target)
    app.router.add_route("*", "/{tail:.*}", forward)
    return app


class ProxyServer:
    """One running proxy: a thread, an event loop, a bound socket."""

    def __init__(
        self,
        app_factory: Callable[[], web.Application],
        port: int,
        host: str = HOST,
        on_exit: Callable[[BaseException | None], None] | None = None,
    ):
        self._factory = app_factory
        self.host = host
        self.requested_port = port
        self.port = port
        self._on_exit = on_exit
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._start_error: BaseException | None = None
        self._stopping = False

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive() and self._ready.is_set() and not self._start_error

    def start(self, timeout: float = 15.0) -> "ProxyServer":
        self._thread = threading.Thread(target=self._run, name=f"scalpel-proxy-{self.requested_port}", daemon=True)
        self._thread.start()
        if not self._ready.wait(timeout):
            raise TimeoutError(f"the proxy did not start within {timeout:.0f} s")
        if self._start_error is not None:
            self._thread.join(timeout)
            raise self._start_error
        return self

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        asyncio.set_event_loop(loop)
        crash: BaseException | None = None
        try:
            try:
                loop.run_until_complete(self._setup())
            except BaseException as e:  # noqa: BLE001
                self._start_error = e
                self._ready.set()
                return
            self._ready.set()
            loop.run_forever()
            if not self._stopping:
                crash = RuntimeError("the proxy's event loop stopped unexpectedly")
        except BaseException as e:  # noqa: BLE001
            crash = e
        finally:
            try:
                if self._runner is not None:
                    loop.run_until_complete(self._runner.cleanup())
            except BaseException:  # noqa: BLE001
                log.exception("proxy cleanup failed")
            try:
                loop.run_until_complete(loop.shutdown_asyncgens())
                loop.run_until_complete(loop.shutdown_default_executor())
            except BaseException:  # noqa: BLE001
                pass
            loop.close()
            if self._ready.is_set() and self._start_error is None and self._on_exit is not None:
                if crash is not None:
                    log.error("proxy crashed: %s", crash)
                try:
                    self._on_exit(crash)
                except Exception:  # noqa: BLE001
                    log.exception("on_exit failed")

    async def _setup(self) -> None:
        app = self._factory()
        runner = web.AppRunner(
            app,
            handle_signals=False,
            shutdown_timeout=SHUTDOWN_TIMEOUT_S,
            handler_cancellation=True,
            auto_decompress=False,
            access_log=None,
        )
        await runner.setup()
        self._runner = runner
        site = web.TCPSite(runner, self.host, self.requested_port, reuse_port=False)
        try:
            await site.start()
        except OSError as e:
            await runner.cleanup()
            self._runner = None
            if e.errno in (errno.EADDRINUSE, getattr(errno, "WSAEADDRINUSE", -1)):
                raise port_in_use_error(self.requested_port, self.host) from None
            raise
        for addr in runner.addresses:
            if isinstance(addr, tuple) and len(addr) >= 2:
                self.port = int(addr[1])
                break

    def stop(self, timeout: float = 5.0) -> bool:
        """Stop serving (from any thread); True when the thread ended within ``timeout``."""
        self._stopping = True
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return True
        if thread is threading.current_thread():
            raise RuntimeError("stop() called from the proxy's own thread")
        try:
            loop.call_soon_threadsafe(loop.stop)
        except RuntimeError:  # loop already closed
            pass
        thread.join(timeout)
        return not thread.is_alive()

    def crash_for_test(self) -> None:
        """Tests: end the loop as if it had died, without asking it to stop."""
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
