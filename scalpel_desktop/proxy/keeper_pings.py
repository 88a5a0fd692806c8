"""What the cache keeper sends by itself: the ping's bytes, and the thread that sends them on time.

A ping is the conversation's last request as it went upstream (after the
surgery's cuts, the pin included), with two fields changed and nothing else:
``max_tokens`` 1 and ``stream`` false. Every field that makes the cache key -
tools, system, messages, ``tool_choice``, ``thinking``, ``output_config``,
``context_management`` (``wire/cache_rules.MESSAGE_CACHE_SETTINGS``) - is the
one the request sent, so the ping reads the very entry the request wrote
(``tests/proxy/test_keeper.py`` checks it against the emulator's cache model).
Messages after the one that holds the last cache marker are left out (nothing
after the last marker is cached; Claude Code marks its last message, so there
is nothing to leave out). A request with ``thinking`` of type ``enabled``
gets no ping: its ``max_tokens`` must exceed the thinking budget, and a
change of the thinking settings would break the cache it is meant to keep.

The headers are the client's own (its key or token included), as the request
carried them, minus those the HTTP client recomputes (``proxy/headers.py``):
they are held in memory for as long as the conversation waits, never written
anywhere, never logged. The answer goes to no client and into no history: its
usage counts are read and the body dropped.

``PingLoop`` is one thread with its own event loop and HTTP session, started
at the first ping due and stopped with the proxy (``close``): the keeper's
ticks look at the project's clock (``clock.now()``: ``SCALPEL_TEST_CLOCK_FILE``
moves it in tests) every ``TICK_REAL_S``, well within the keeper's one second.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import aiohttp
from yarl import URL

from scalpel_desktop.proxy.routing import env_proxy_for
from scalpel_desktop.proxy.headers import upstream_request_headers
from scalpel_desktop.wire.jsoncodec import dumps, loads
from scalpel_desktop.wire.usage import Usage
from scalpel_desktop.wire.usage_tap import tap_body

log = logging.getLogger("scalpel.keeper")

TICK_REAL_S = 0.2  # real seconds between two looks at the clock
PING_TIMEOUT_S = 120.0  # a ping that takes longer is given up (it may still have been billed)
MAX_ANSWER_BYTES = 1 << 20  # a one-token answer is small; more is not read


def ping_body(raw: bytes) -> bytes | None:
    """The ping for a Messages request's sent bytes (see the module docstring); None: no ping possible."""
    try:
        doc = loads(raw)
    except ValueError:
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("messages"), list) or not doc["messages"]:
        return None
    thinking = doc.get("thinking")
    if isinstance(thinking, dict) and thinking.get("type") == "enabled":
        return None
    msgs = doc["messages"]
    last = max((i for i, m in enumerate(msgs) if _marked(m)), default=None)
    if last is None:
        return None  # no marker: nothing is cached, nothing to keep
    if last < len(msgs) - 1 and isinstance(msgs[last], dict) and msgs[last].get("role") == "user":
        doc["messages"] = msgs[:last + 1]
    doc["max_tokens"] = 1
    if "stream" in doc:
        doc["stream"] = False
    return dumps(doc)


def _marked(msg: Any) -> bool:
    content = msg.get("content") if isinstance(msg, dict) else None
    return isinstance(content, list) and any(isinstance(b, dict) and "cache_control" in b for b in content)


def ping_headers(headers: Mapping[str, str]) -> list[tuple[str, str]]:
    """The client's headers for the ping (kept in memory only), without those recomputed for it."""
    return list(upstream_request_headers([(k, v) for k, v in headers.items()
                                          if k.lower() not in ("accept-encoding",)]).items())


class PingResult:
    __slots__ = ("status", "usage", "error", "ttfb_ms", "total_ms")

    def __init__(self, status: int, usage: Usage | None, error: str, ttfb_ms: float | None, total_ms: float):
        self.status, self.usage, self.error, self.ttfb_ms, self.total_ms = status, usage, error, ttfb_ms, total_ms


class PingLoop:
    """One thread, one event loop, one HTTP session: ``tick`` runs on it every ``TICK_REAL_S``."""

    def __init__(self, tick: Callable[["PingLoop"], None], connect_timeout_s: float = 30.0):
        self._tick = tick
        self.connect_timeout_s = connect_timeout_s
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._session: aiohttp.ClientSession | None = None
        self._stop: asyncio.Event | None = None
        self._lock = threading.Lock()
        self._ready = threading.Event()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> None:
        with self._lock:
            if self.running:
                return
            self._ready.clear()
            self._thread = threading.Thread(target=self._run, name="scalpel-keeper", daemon=True)
            self._thread.start()
        self._ready.wait(5.0)

    def _run(self) -> None:
        loop = self._loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(self._main())
        finally:
            loop.close()

    async def _main(self) -> None:
        self._stop = asyncio.Event()
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=16),
            timeout=aiohttp.ClientTimeout(total=PING_TIMEOUT_S, sock_connect=self.connect_timeout_s),
            auto_decompress=False, cookie_jar=aiohttp.DummyCookieJar(), trust_env=False)
        self._ready.set()
        try:
            while not self._stop.is_set():
                try:
                    self._tick(self)
                except Exception:  # noqa: BLE001 - a tick never ends the keeper
                    log.exception("the cache keeper's tick failed")
                try:
                    await asyncio.wait_for(self._stop.wait(), TICK_REAL_S)
                except asyncio.TimeoutError:
                    pass
        finally:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await self._session.close()

    def spawn(self, coro: Any) -> None:
        """Run ``coro`` on the loop (from the loop's own thread: a tick)."""
        asyncio.ensure_future(coro)

    async def send(self, url: str, headers: list[tuple[str, str]], body: bytes) -> PingResult:
        """POST the ping; its status and usage counts (never raises)."""
        t0 = time.perf_counter()
        ttfb = None
        try:
            target = URL(url, encoded=True)
            async with self._session.post(target, data=body, headers=headers, allow_redirects=False,
                                          skip_auto_headers=("User-Agent", "Accept", "Accept-Encoding", "Content-Type"),
                                          proxy=env_proxy_for(target)) as up:
                ttfb = (time.perf_counter() - t0) * 1000.0
                raw = await up.content.read(MAX_ANSWER_BYTES)
                tap = tap_body(raw, up.headers.get("Content-Type", ""), up.headers.get("Content-Encoding", ""))
                return PingResult(up.status, tap.usage(), tap.error, ttfb, (time.perf_counter() - t0) * 1000.0)
        except asyncio.CancelledError:
            raise
        except Exception as e:  # noqa: BLE001 - a failed ping is counted, never raised
            return PingResult(0, None, f"{type(e).__name__}"[:60], ttfb, (time.perf_counter() - t0) * 1000.0)

    def close(self, timeout: float = 2.0) -> None:
        loop, stop, thread = self._loop, self._stop, self._thread
        if loop is None or stop is None or thread is None:
            return
        try:
            loop.call_soon_threadsafe(stop.set)
        except RuntimeError:
            pass  # (already closed)
        thread.join(timeout)
