"""Running the emulator: in a background thread (tests, benchmarks) or in the foreground (CLI).

Both use the shipped ``AppThread`` (proxy/app_thread.py), the one aiohttp
app-in-a-thread runner; the emulator adds only its app and its defaults.
"""

from __future__ import annotations

import signal
import threading
from typing import Callable

from scalpel_desktop.emulator.server import Emulator
from scalpel_desktop.proxy.app_thread import AppThread


class EmulatorThread(AppThread):
    """The emulator's aiohttp app on its own event loop in a daemon thread."""

    def __init__(self, emulator: Emulator, host: str = "127.0.0.1", port: int = 0):
        super().__init__(emulator.app, port, host, label="the emulator", name="scalpel-emulator", shutdown_timeout=1.0)
        self.emulator = emulator

    def start(self, timeout: float = 10.0) -> "EmulatorThread":
        super().start(timeout)
        return self


def serve_forever(emulator: Emulator, host: str = "127.0.0.1", port: int = 0,
                  on_ready: Callable[[str], None] | None = None) -> None:
    """Foreground: serve until Ctrl-C or SIGTERM (``scalpel emulator``); a bind error is raised as it came."""
    thread = EmulatorThread(emulator, host, port).start()

    def on_term(signum, frame):  # noqa: ARG001
        raise KeyboardInterrupt

    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, on_term)
    try:
        if on_ready:
            on_ready(thread.url)
        while not thread.wait(1.0):
            pass
    finally:
        thread.stop()
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
