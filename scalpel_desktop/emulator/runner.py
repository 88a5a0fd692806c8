"""Running the emulator: in a background thread (tests, benchmarks) or in the foreground (CLI)."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from aiohttp import web

from scalpel_desktop.emulator.server import Emulator


class EmulatorThread:
    """The emulator's aiohttp app on its own event loop in a daemon thread."""

    def __init__(self, emulator: Emulator, host: str = "127.0.0.1", port: int = 0):
        self.emulator = emulator
        self.host = host
        self.port = port
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self, timeout: float = 10.0) -> "EmulatorThread":
        self._thread = threading.Thread(target=self._run, name="scalpel-emulator", daemon=True)
        self._thread.start()
        if not self._ready.wait(timeout):
            raise RuntimeError("the emulator did not start in time")
        if self._error is not None:
            raise self._error
        return self

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(self._start())
        except BaseException as e:  # noqa: BLE001 - reported to start()
            self._error = e
            self._ready.set()
            loop.close()
            return
        self._ready.set()
        try:
            loop.run_forever()
        finally:
            loop.run_until_complete(self._runner.cleanup())
            loop.close()

    async def _start(self) -> None:
        self._runner = web.AppRunner(self.emulator.app(), handle_signals=False, access_log=None,
                                     shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        if self.port == 0:
            server = site._server  # noqa: SLF001 - the only way to read the bound port
            self.port = server.sockets[0].getsockname()[1]

    def stop(self, timeout: float = 5.0) -> None:
        loop, thread = self._loop, self._thread
        if loop is None or thread is None or not thread.is_alive():
            return
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout)

    def __enter__(self) -> "EmulatorThread":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def serve_forever(emulator: Emulator, host: str = "127.0.0.1", port: int = 0, on_ready=None) -> None:
    """Foreground: serve until interrupted (``scalpel emulator``)."""

    async def main() -> None:
        runner = web.AppRunner(emulator.app(), handle_signals=True, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, host, port)
        await site.start()
        bound = site._server.sockets[0].getsockname()[1]  # noqa: SLF001
        if on_ready:
            on_ready(f"http://{host}:{bound}")
        try:
            await asyncio.Event().wait()
        finally:
            await runner.cleanup()

    asyncio.run(main())
