"""One aiohttp app served from its own thread and event loop: the proxy's and the emulator's runner.

``AppThread`` runs an app with ``AppRunner`` + ``TCPSite`` (aiohttp
web_advanced) in a daemon thread with its own loop, so the caller's thread
(the tray's GUI loop, a CLI's wait, a test) stays free. ``handle_signals=False``
(the caller owns the signals) and a short ``shutdown_timeout`` (a stop never
waits on a long stream). ``start()`` returns once the socket is bound (port 0
picks a free one; ``port`` then names it) or raises what binding raised, after
``bind_error`` has turned it into the caller's own error. ``stop()`` is
thread-safe (``call_soon_threadsafe``) and bounded. A loop that ends without
being asked to is a crash: ``on_exit(crash)`` tells the owner, which may
restart it.

It lives in proxy/ because the shipped proxy is its main user and shipped code
never imports the emulator; the emulator imports it from here. It knows
nothing of either app.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import Any, Callable

from aiohttp import web

log = logging.getLogger("scalpel.app_thread")

HOST = "127.0.0.1"


class AppThread:
    """One running app: a thread, an event loop, a bound socket."""

    def __init__(
        self,
        app_factory: Callable[[], web.Application],
        port: int = 0,
        host: str = HOST,
        *,
        label: str = "the app",
        name: str = "scalpel-app",
        shutdown_timeout: float = 0.5,
        runner_options: dict[str, Any] | None = None,
        bind_error: Callable[[OSError], BaseException | None] | None = None,
        on_exit: Callable[[BaseException | None], None] | None = None,
    ):
        self._factory = app_factory
        self.host = host
        self.requested_port = port
        self.port = port
        self._label = label  # for messages: "the proxy"
        self._name = name  # the thread's name
        self._shutdown_timeout = shutdown_timeout
        self._runner_options = dict(runner_options or {})
        self._bind_error = bind_error
        self._on_exit = on_exit
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._start_error: BaseException | None = None
        self._stopping = False

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive() and self._ready.is_set() and not self._start_error

    def start(self, timeout: float = 15.0) -> "AppThread":
        self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
        self._thread.start()
        if not self._ready.wait(timeout):
            raise TimeoutError(f"{self._label} did not start within {timeout:.0f} s")
        if self._start_error is not None:
            self._thread.join(timeout)
            raise self._start_error
        return self

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the thread ends (True) or ``timeout`` passes (False)."""
        if self._thread is None:
            return True
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        asyncio.set_event_loop(loop)
        crash: BaseException | None = None
        try:
            try:
                loop.run_until_complete(self._setup())
            except BaseException as e:  # noqa: BLE001 - reported to start()
                self._start_error = e
                self._ready.set()
                return
            self._ready.set()
            loop.run_forever()
            if not self._stopping:
                crash = RuntimeError(f"{self._label}'s event loop stopped unexpectedly")
        except BaseException as e:  # noqa: BLE001
            crash = e
        finally:
            try:
                if self._runner is not None:
                    loop.run_until_complete(self._runner.cleanup())
            except BaseException:  # noqa: BLE001
                log.exception("%s: cleanup failed", self._label)
            try:
                loop.run_until_complete(loop.shutdown_asyncgens())
                loop.run_until_complete(loop.shutdown_default_executor())
            except BaseException:  # noqa: BLE001
                pass
            loop.close()
            if self._ready.is_set() and self._start_error is None and self._on_exit is not None:
                if crash is not None:
                    log.error("%s crashed: %s", self._label, crash)
                try:
                    self._on_exit(crash)
                except Exception:  # noqa: BLE001
                    log.exception("on_exit failed")

    async def _setup(self) -> None:
        runner = web.AppRunner(
            self._factory(), handle_signals=False, shutdown_timeout=self._shutdown_timeout, access_log=None,
            **self._runner_options,
        )
        await runner.setup()
        self._runner = runner
        site = web.TCPSite(runner, self.host, self.requested_port, reuse_port=False)
        try:
            await site.start()
        except OSError as e:
            await runner.cleanup()
            self._runner = None
            mapped = self._bind_error(e) if self._bind_error is not None else None
            if mapped is not None:
                raise mapped from None
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
            raise RuntimeError(f"stop() called from {self._label}'s own thread")
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

    def __enter__(self) -> "AppThread":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
