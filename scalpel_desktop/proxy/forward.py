"""Forwarding: any method, any path, to the right upstream, bytes untouched.

Routing: ``/openai/...`` goes to the OpenAI upstream with the ``/openai``
prefix stripped (clients set ``OPENAI_BASE_URL=http://127.0.0.1:4242/openai/v1``);
everything else goes to the Anthropic upstream. The path and query string are
passed on exactly as the client wrote them.

The request body is read into memory up to ``body_limit`` bytes; a larger one
(by its Content-Length, or found while reading a chunked one) streams through
untouched and is never parsed. Only API requests (JSON POSTs to messages,
count_tokens, chat completions, responses) are shown to the pipeline, in a
worker thread; what goes upstream is ``exchange.body_to_send()``: the
client's own bytes unless a stage changed them, never a re-serialization.
While no stage that could change a body would run (paused, or an observing
pipeline), the request goes upstream at once and the pipeline looks at it
after the answer has streamed back (parsing a 3 MB body holds the GIL for
tens of ms: never while a response is on its way), so observing costs no
latency. With ``cache_diagnostics`` on, ``proxy/diagnostics.py`` adds the provider's cache-diagnosis
beta and field to what the pipeline chose to send (a refusal goes again without them).

After the answer, the pipeline's ``complete`` (the ledger row, a first
sighting's analysis) runs on the completion pool (``proxy/completer.py``:
one conversation's completions in order, others beside them; each starts
once no request is on its request path or streaming, half a second at most)
and the handler returns at once. Only that conversation's next request waits
for it (``Chain.answered``, ``pipeline/chain.py``).

The response streams back chunk by chunk as it arrives (``iter_any``), SSE
included, with no total timeout. The upstream session runs with
``auto_decompress=False``: a compressed answer reaches the client as the exact
bytes the upstream sent; the usage tap reads a decompressed copy.

Faults, as the client would have seen them without the proxy (SPEC 8):
upstream unreachable -> 502 with a JSON body in the API's own error shape;
upstream 4xx/5xx/529 -> passed through verbatim; an error after the response
started -> logged, and the client's connection is closed without a clean end
so it sees the broken stream; the client goes away -> the upstream call is
cancelled and its connection closed.
"""

from __future__ import annotations

import asyncio
import logging
import time
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Callable

import aiohttp
from aiohttp import web
from yarl import URL

from scalpel_desktop import clock
from scalpel_desktop.wire.usage import Usage
from scalpel_desktop.exchange import ApiRequest, Exchange, Pipeline, ResponseResult
from scalpel_desktop.proxy import after_answer, diagnostics
from scalpel_desktop.proxy.completer import RequestsFirst
from scalpel_desktop.proxy.headers import client_response_headers, upstream_request_headers
from scalpel_desktop.proxy.routing import endpoint_of, env_proxy_for, error_body, split_route
from scalpel_desktop.proxy.trim import Trimmer
from scalpel_desktop.wire.usage_tap import UsageTap

log = logging.getLogger("scalpel.proxy")

# Headers aiohttp would add on its own; the upstream must see only the client's.
_SKIP_AUTO = ("User-Agent", "Accept", "Accept-Encoding", "Content-Type")
_UNREACHABLE = (aiohttp.ClientConnectorError, aiohttp.ServerDisconnectedError, aiohttp.ClientOSError,
                aiohttp.ServerTimeoutError, aiohttp.ClientPayloadError, asyncio.TimeoutError, ConnectionError)


@dataclass
class Finished:
    """What the runtime's counters learn about one forwarded request."""

    api: str
    endpoint: str
    status: int
    usage: Usage | None
    error: str = ""
    piped: bool = False  # went through the pipeline


@dataclass
class ProxyOptions:
    """Everything forwarding needs from its owner, read on every request (live settings)."""

    upstream: Callable[[str], str]  # api ("anthropic" | "openai") -> base URL
    body_limit: Callable[[], int] = lambda: 64 * 1024 * 1024  # bytes
    pipeline: Pipeline | None = None
    executor: Executor | None = None  # pipeline work that the answer waits for
    observer: Executor | None = None  # observe-only work, after the answer (one thread keeps the order)
    completer: Executor | None = None  # completions, after the answer (``completer.KeyedPool``: by conversation)
    requests_first: RequestsFirst | None = None  # holds the start of completions while requests need the CPU
    on_finished: Callable[[Finished], None] | None = None
    trimmer: Trimmer | None = None  # gives large requests' memory back once they are done (server.py)
    diagnosis: Any = None  # proxy/diagnostics.Diagnosis: the provider's cache diagnosis, opt-in
    connect_timeout_s: float = 30.0
    _pending: set = field(default_factory=set, repr=False)


UPSTREAM_SESSION = web.AppKey("upstream_session", aiohttp.ClientSession)
OPTIONS = web.AppKey("proxy_options", ProxyOptions)


async def upstream_session_ctx(app: web.Application) -> AsyncIterator[None]:
    """One shared ClientSession for the app's lifetime (aiohttp client_advanced)."""
    opts = app[OPTIONS]
    session = aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=256, enable_cleanup_closed=True),
        timeout=aiohttp.ClientTimeout(total=None, sock_connect=opts.connect_timeout_s, sock_read=None),
        auto_decompress=False,
        cookie_jar=aiohttp.DummyCookieJar(),
        trust_env=False,  # env proxies applied per upstream below, never for loopback
    )
    app[UPSTREAM_SESSION] = session
    try:
        yield
    finally:
        await session.close()


# -- the handler -------------------------------------------------------------


async def _read_bounded(request: web.Request, limit: int) -> tuple[bytes, bool]:
    """(body, complete). Not complete: ``body`` is a prefix and the rest is still unread."""
    length = request.content_length
    if length is not None and length > limit:
        return b"", False
    if length is not None:
        return await request.read(), True
    parts: list[bytes] = []
    size = 0
    async for chunk in request.content.iter_any():
        parts.append(chunk)
        size += len(chunk)
        if size > limit:
            return b"".join(parts), False
    return b"".join(parts), True


async def _prefix_then_rest(prefix: bytes, request: web.Request) -> AsyncIterator[bytes]:
    if prefix:
        yield prefix
    async for chunk in request.content.iter_any():
        yield chunk


def _is_api_request(method: str, endpoint: str, headers: Any) -> bool:
    if method != "POST" or endpoint == "other":
        return False
    enc = headers.get("Content-Encoding", "")
    if enc and enc.lower() != "identity":
        return False
    ctype = headers.get("Content-Type", "")
    return not ctype or "json" in ctype.lower()


async def forward(request: web.Request) -> web.StreamResponse:
    opts = request.app[OPTIONS]
    gate = opts.requests_first
    if gate is None:
        return await _forward(request, opts, None)
    ticket = gate.entered()
    try:
        return await _forward(request, opts, ticket)
    finally:
        ticket.finished()


async def _forward(request: web.Request, opts: ProxyOptions, ticket: Any) -> web.StreamResponse:
    app = request.app
    session = app[UPSTREAM_SESSION]
    loop = asyncio.get_running_loop()
    received_at = clock.now()
    t0 = time.perf_counter()

    api, upstream_pq = split_route(request.raw_path)
    path = upstream_pq.split("?", 1)[0]
    query = upstream_pq.split("?", 1)[1] if "?" in upstream_pq else ""
    endpoint = endpoint_of(api, path)
    base = opts.upstream(api).rstrip("/")
    url = URL(base + upstream_pq, encoded=True)

    try:
        limit = int(opts.body_limit())
    except Exception:  # noqa: BLE001
        limit = 64 * 1024 * 1024
    body, complete = await _read_bounded(request, limit)
    data: Any = body if complete else _prefix_then_rest(body, request)

    pipeline = opts.pipeline if complete and _is_api_request(request.method, endpoint, request.headers) else None
    api_req: ApiRequest | None = None
    ex: Exchange | None = None
    deferred = False
    if pipeline is not None:
        api_req = ApiRequest(
            method=request.method,
            path=path,
            query=query,
            api=api,
            endpoint=endpoint,
            headers={k.lower(): v for k, v in request.headers.items()},
            body=body,
            received_at=received_at,
        )
        # The pause switch as read now when nothing could change the body: handed to the
        # pipeline when it looks at the request after the answer (a resume pressed
        # meanwhile must not let mutating stages act on a request that went unchanged).
        paused_now = pipeline.observe_only()
        if paused_now is not None:
            deferred = True  # nothing can change the body: look at it after the answer
        else:
            try:
                ex = await loop.run_in_executor(opts.executor, pipeline.process, api_req)
                sent = ex.body_to_send()
                if isinstance(sent, (bytes, bytearray)):
                    data = bytes(sent)
            except Exception:  # noqa: BLE001 - fail open: forward the original bytes
                log.exception("pipeline failed on %s %s; forwarding the original bytes", request.method, path)
                ex = None
                data = body

    ask = diagnostics.ask(opts.diagnosis, base, ex, data)  # (after the pipeline: cache bytes as it chose)
    seen = _Seen()
    if ticket is not None:
        ticket.sent()  # (the body is read and the pipeline has run: what is left mostly waits on the upstream)
        seen.touch = opts.requests_first.touch
    try:
        resp = await _exchange(request, session, url, data, api, t0, seen, ask)
    except asyncio.CancelledError:
        seen.error = "client disconnected"
        raise
    finally:
        status, ttfb_ms, error = seen.status, seen.ttfb_ms, seen.error
        usage = seen.usage()
        total_ms = (time.perf_counter() - t0) * 1000.0
        _count(opts, api, endpoint, status, usage, error, piped=pipeline is not None)
        if pipeline is not None and api_req is not None:
            result = ResponseResult(
                status=status, usage=usage, ttfb_ms=ttfb_ms, total_ms=total_ms, finished_at=clock.now(), error=error,
                diagnosis=diagnostics.answered(ask, seen.tap, status), stop_reason=getattr(seen.tap, "stop_reason", ""))
            if deferred:
                # One observer thread, first in first out: records keep the requests' order.
                after_answer.background(opts, loop.run_in_executor(
                    opts.observer or opts.executor, after_answer.observe, pipeline, api_req, result, paused_now))
            elif ex is not None:
                # Not awaited: the connection is free for its next request at once. The pipeline
                # orders per conversation instead (``answered``): that conversation's next request
                # waits in ``process`` until this completion has run; no other one does.
                after_answer.answered(pipeline, ex, result)
                after_answer.background(opts, after_answer.run_completion(opts, pipeline, ex, result))
    return resp


def _count(opts: ProxyOptions, api: str, endpoint: str, status: int, usage: Usage | None, error: str, piped: bool) -> None:
    if opts.on_finished is None:
        return
    try:
        opts.on_finished(Finished(api, endpoint, status, usage, error, piped=piped))
    except Exception:  # noqa: BLE001
        log.exception("status counters failed")


class _Seen:
    """What the upstream's answer showed so far, kept outside ``_exchange``: the counts a stream
    carried are billed whatever ends it (a client that hangs up after the last event, a cancel)."""

    def __init__(self) -> None:
        self.status = 0
        self.ttfb_ms: float | None = None
        self.error = ""
        self.tap: UsageTap | None = None
        self.broken = False
        self.touch: Callable[[], None] = _nothing  # each chunk streamed (``RequestsFirst.touch``)

    def usage(self) -> Usage | None:
        if self.tap is None or self.broken:
            return None
        try:
            return self.tap.usage()
        except Exception:  # noqa: BLE001 - counting never fails a request
            log.exception("usage tap failed")
            return None


async def _exchange(request: web.Request, session: aiohttp.ClientSession, url: URL, data: Any, api: str, t0: float,
                    seen: _Seen, ask: Any = None) -> web.StreamResponse:
    """Send upstream, stream the answer back, noting status, usage, ttfb and error in ``seen``."""
    headers = upstream_request_headers(_raw_pairs(request))
    try:
        up, early = await diagnostics.send(session, request.method, url, headers, data, ask, allow_redirects=False,
                                           skip_auto_headers=_SKIP_AUTO, proxy=env_proxy_for(url))
    except Exception as e:  # noqa: BLE001 - unreachable, refused, reset, bad URL: all a 502
        msg = f"upstream {url.scheme}://{url.host}:{url.port} unreachable ({type(e).__name__}: {e})"
        log.warning("%s", msg)
        seen.status, seen.error = 502, "upstream unreachable"
        return web.Response(status=502, body=error_body(api, "scalpel: " + msg), content_type="application/json")

    seen.status = up.status
    seen.ttfb_ms = (time.perf_counter() - t0) * 1000.0
    try:
        raw_pairs = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in up.raw_headers]
        chunked = "chunked" in up.headers.get("Transfer-Encoding", "").lower()
        resp = web.StreamResponse(
            status=up.status,
            reason=up.reason,
            headers=client_response_headers(raw_pairs, keep_length=not chunked),
        )
        tap = seen.tap = UsageTap(up.headers.get("Content-Type", ""), up.headers.get("Content-Encoding", ""))
        await resp.prepare(request)
        try:
            async for chunk in diagnostics.chunks(up, early):
                tap.feed(chunk)  # before the write: what the upstream sent is billed even if the client left
                seen.touch()
                await resp.write(chunk)
            await resp.write_eof()
        except ConnectionResetError as e:  # aiohttp.ClientConnectionResetError included
            if request.transport is None or request.transport.is_closing():
                seen.error = "client disconnected"
                log.info("client went away during %s %s", request.method, url.path)
                return resp
            raise _Broken(e) from e
        except _UNREACHABLE as e:
            raise _Broken(e) from e
        seen.error = tap.error
        return resp
    except _Broken as b:
        log.warning("upstream broke off %s mid-response: %s: %s", url.path, type(b.cause).__name__, b.cause)
        if request.transport is not None:
            request.transport.close()  # the client sees the broken stream, not a clean end
        seen.broken, seen.error = True, f"upstream broke off: {type(b.cause).__name__}"
        return resp
    finally:
        up.close()  # no-op after a complete read; otherwise the upstream connection is dropped


def _nothing() -> None:
    pass


class _Broken(Exception):
    def __init__(self, cause: BaseException):
        super().__init__(str(cause))
        self.cause = cause


def _raw_pairs(request: web.Request) -> list[tuple[str, str]]:
    return [(k.decode("latin-1"), v.decode("latin-1")) for k, v in request.raw_headers]
