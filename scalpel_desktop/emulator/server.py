"""The emulated upstream: an aiohttp app answering like the Anthropic and OpenAI APIs.

Routes: ``POST /v1/messages`` (any query string; JSON or SSE),
``POST /v1/messages/count_tokens``, ``GET /v1/models``,
``POST /v1/chat/completions``, ``POST /v1/responses``, and the control
routes under ``/_emulator/`` (requests, fault, clock, script, clear, health).

Every request is recorded before anything else happens (``Emulator.recorder``),
billed by the one cache model (``accounting.cache_model``) on the emulator's
clock (``clock.now()`` plus an offset the tests can move), and answered from
the script (``emulator.script``) unless a fault is queued.
"""

from __future__ import annotations

import asyncio
import os
import logging
import threading
from typing import Any, Callable, Mapping

from aiohttp import web
from multidict import CIMultiDict, CIMultiDictProxy

from scalpel_desktop import clock
from scalpel_desktop.accounting.cache_model import (
    CacheControlError, PromptCache, min_cacheable_for, openai_blocks, request_blocks)
from scalpel_desktop.emulator import answers
from scalpel_desktop.emulator.control import add_control_routes
from scalpel_desktop.emulator.diagnostics import Diagnosis
from scalpel_desktop.emulator.faults import Fault, FaultQueue
from scalpel_desktop.emulator.record import RecordedRequest, Recorder
from scalpel_desktop.emulator.script import Script, ScriptLike, choose
from scalpel_desktop.wire.api_rules import (
    ApiError, bad, validate_chat_body, validate_messages_body, validate_responses_body)
from scalpel_desktop.wire.identity import conversation_key
from scalpel_desktop.wire.jsoncodec import JSONDecodeError, dumps, loads

log = logging.getLogger("scalpel.emulator")

MODELS = [
    ("claude-opus-4-1-20250805", "Claude Opus 4.1"),
    ("claude-sonnet-4-5-20250929", "Claude Sonnet 4.5"),
    ("claude-haiku-4-5-20251001", "Claude Haiku 4.5"),
]
OPENAI_MODELS = ["gpt-4.1", "gpt-4.1-mini", "gpt-5"]
OPENAI_CACHE_TTL_S = 3600.0
OPENAI_CACHE_TTL_24H_S = 24 * 3600.0


class Emulator:
    """The emulator's state; ``app()`` builds the aiohttp application around it.

    ``min_cacheable``: an int for every model, or None for the per-model table
    (``cache_model.min_cacheable_for``). ``chunk_delay``: seconds between
    stream events for every request (a fault can slow single requests).
    ``lookback`` and ``refresh``: which reading of the undocumented cache
    behaviours to bill under (``accounting/cache_model.py``).
    ``compress``: gzip JSON answers when the client accepts it (streams never).
    ``cache_diagnosis``: how the cache-diagnosis beta is answered (``emulator/diagnostics.py``).
    """

    def __init__(self, script: ScriptLike | None = None, *, min_cacheable: int | None = None,
                 lookback: int = 20, require_auth: bool = True, chunk_delay: float = 0.0,
                 compress: bool = False, refresh: str = "each", shared_clock: bool = False,
                 cache_diagnosis: str = "beta"):
        self.script: ScriptLike = script if script is not None else Script()
        self.min_cacheable = min_cacheable
        # lookback and refresh: readings of the two behaviours the API leaves undocumented
        self.cache = PromptCache(min_cacheable or 1024, lookback, refresh)
        self.require_auth = require_auth
        self.chunk_delay = chunk_delay
        self.compress = compress
        self.recorder = Recorder()
        self.faults = FaultQueue()
        self.diagnosis = Diagnosis(cache_diagnosis)
        self.offset = 0.0
        # Move the clock file every process reads (SCALPEL_TEST_CLOCK_FILE: the proxy's too) rather
        # than this emulator's own offset: ``scalpel emulator`` does, so trying the TTL story moves both.
        self.shared_clock = bool(shared_clock and os.environ.get("SCALPEL_TEST_CLOCK_FILE"))
        self._lock = threading.Lock()

    # ---------------------------------------------------------------- python API
    def now(self) -> float:
        return clock.now() + self.offset

    def advance(self, seconds: float) -> None:
        with self._lock:
            if self.shared_clock:
                clock.set_offset(os.environ["SCALPEL_TEST_CLOCK_FILE"], clock.offset() + seconds)
            else:
                self.offset += seconds

    def set_offset(self, seconds: float) -> None:
        """The clock ``seconds`` ahead of the wall clock (the shared file's offset when shared)."""
        with self._lock:
            if self.shared_clock:
                clock.set_offset(os.environ["SCALPEL_TEST_CLOCK_FILE"], seconds - self.offset)
            else:
                self.offset = float(seconds)

    def set_now(self, t: float) -> None:
        """Make ``now()`` return ``t`` at this instant (the clock keeps running)."""
        self.advance(t - self.now())

    def set_script(self, script: ScriptLike) -> None:
        self.script = script

    def fault(self, kind: str | int, count: int = 1, **opts: Any) -> Fault:
        return self.faults.add(Fault.make(kind, count, **opts))

    def clear(self, cache: bool = False) -> None:
        """Forget recorded requests and queued faults (and the cache entries if asked)."""
        self.recorder.clear()
        self.faults.clear()
        if cache:
            self.cache.clear()

    @property
    def received(self) -> list[RecordedRequest]:
        return self.recorder.snapshot()

    def _floor(self, model: str) -> int:
        return self.min_cacheable if self.min_cacheable is not None else min_cacheable_for(model)

    # ---------------------------------------------------------------- app
    def app(self) -> web.Application:
        app = web.Application(client_max_size=1024 ** 3)
        r = app.router
        r.add_post("/v1/messages", self.h_messages)
        r.add_post("/v1/messages/count_tokens", self.h_count_tokens)
        r.add_get("/v1/models", self.h_models)
        r.add_post("/v1/chat/completions", self.h_chat)
        r.add_post("/v1/responses", self.h_responses)
        add_control_routes(app, self)
        r.add_route("*", "/{tail:.*}", self.h_unknown)
        return app

    async def _record(self, request: web.Request, api: str, endpoint: str) -> RecordedRequest:
        body = await request.read()
        return self.recorder.add(
            method=request.method, path=request.path, query=request.query_string,
            headers=CIMultiDictProxy(CIMultiDict(request.headers)), body=body, time=self.now(),
            api=api, endpoint=endpoint)

    def _auth(self, request: web.Request, api: str) -> None:
        if not self.require_auth:
            return
        if api == "anthropic":
            if not request.headers.get("x-api-key") and not request.headers.get("authorization"):
                raise ApiError(401, "authentication_error", "x-api-key header is required")
        elif not request.headers.get("authorization", "").lower().startswith("bearer "):
            raise ApiError(401, "invalid_request_error",
                           "You didn't provide an API key. You need to provide your API key in an "
                           "Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).")

    def _json(self, data: Any, status: int = 200, headers: Mapping[str, str] | None = None) -> web.Response:
        resp = web.json_response(data, status=status, headers=headers, dumps=_json_text)
        if self.compress:
            resp.enable_compression()
        return resp

    def _error_response(self, rec: RecordedRequest, err: ApiError, api: str,
                        headers: Mapping[str, str] | None = None) -> web.Response:
        rec.status, rec.error = err.status, err.message
        body = err.anthropic_body() if api == "anthropic" else err.openai_body()
        return self._json(body, status=err.status, headers=headers)

    def _fault_error(self, rec: RecordedRequest, fault: Fault, api: str) -> web.Response:
        """The response for status faults (and error_event on a non-streaming request)."""
        status, etype, msg = fault.error()
        headers = {"retry-after": f"{fault.retry_after:g}"} if status in (429, 529) else None
        if headers is not None:
            headers["x-should-retry"] = "true"
        return self._error_response(rec, ApiError(status, etype, msg), api, headers)

    async def _parse(self, rec: RecordedRequest) -> Any:
        try:
            return loads(rec.body)
        except JSONDecodeError:
            raise bad("There was an error parsing the body of your request: invalid JSON") from None

    # ---------------------------------------------------------------- Anthropic
    async def h_messages(self, request: web.Request) -> web.StreamResponse:
        rec = await self._record(request, "anthropic", "messages")
        try:
            self._auth(request, "anthropic")
            fault = self.faults.take(request.path)
            rec.fault = fault.kind if fault else None
            if fault and fault.kind == "drop" and fault.after_events <= 0:
                return await _drop(request, rec)
            if fault and fault.kind in ("429", "529", "500", "status"):
                return self._fault_error(rec, fault, "anthropic")
            body = await self._parse(rec)
            validate_messages_body(body)
            asked = self.diagnosis.check(request.headers, body)  # before the bill: a 400 bills nothing
            if fault and fault.kind == "evict":
                self.cache.clear()  # the provider's side: every entry gone, the answer as usual
            try:
                blocks = request_blocks(body)
                model = body["model"]
                usage = self.cache.bill(("anthropic", model), blocks, self.now(),
                                        min_cacheable=self._floor(model))
            except CacheControlError as e:
                raise bad(str(e)) from None
        except ApiError as err:
            return self._error_response(rec, err, "anthropic")
        rec.conversation = str(conversation_key(request.headers, body))
        choice = choose(self.script, request.headers, body, "anthropic")
        content = answers.anthropic_content(choice.turn, body)
        usage.output_tokens = answers.output_tokens(content)
        message = answers.anthropic_message(choice.turn, body, usage, content)
        self.diagnosis.answer(asked, body, message)  # on the message, so on message_start too
        rec.usage, rec.track, rec.turn, rec.answer = usage, choice.track, choice.index, message
        if not body.get("stream"):
            if fault and fault.kind == "error_event":
                return self._fault_error(rec, fault, "anthropic")
            if fault and fault.kind == "slow":
                await asyncio.sleep(fault.delay + sum(s for _, s in fault.silences))
            rec.status = 200
            return self._json(message, headers=_request_id())
        events = [answers.sse(ev, data) for ev, data in answers.anthropic_events(message)]

        def error_event(f: Fault) -> bytes:
            return answers.sse("error", {"type": "error", "error": {"type": f.error_type or "overloaded_error",
                                                                    "message": f.message or "Overloaded"}})
        return await self._stream(request, rec, events, fault, error_event)

    async def h_count_tokens(self, request: web.Request) -> web.StreamResponse:
        rec = await self._record(request, "anthropic", "count_tokens")
        try:
            self._auth(request, "anthropic")
            fault = self.faults.take(request.path, skip=("evict",))
            if fault and fault.kind in ("429", "529", "500", "status"):
                rec.fault = fault.kind
                return self._fault_error(rec, fault, "anthropic")
            body = await self._parse(rec)
            validate_messages_body(body, count_tokens=True)
            try:
                total = sum(b.tokens for b in request_blocks(body))
            except CacheControlError as e:
                raise bad(str(e)) from None
        except ApiError as err:
            return self._error_response(rec, err, "anthropic")
        rec.status = 200
        return self._json({"input_tokens": total})

    async def h_models(self, request: web.Request) -> web.StreamResponse:
        openai = "anthropic-version" not in request.headers and "x-api-key" not in request.headers
        rec = await self._record(request, "openai" if openai else "anthropic", "models")
        rec.status = 200
        if openai:
            return web.json_response({"object": "list", "data": [
                {"id": m, "object": "model", "created": 1_700_000_000, "owned_by": "openai"}
                for m in OPENAI_MODELS]})
        data = [{"type": "model", "id": m, "display_name": name, "created_at": "2025-09-29T00:00:00Z"}
                for m, name in MODELS]
        return web.json_response({"data": data, "has_more": False, "first_id": data[0]["id"],
                                  "last_id": data[-1]["id"]})

    # ---------------------------------------------------------------- OpenAI
    async def _openai(self, request: web.Request, endpoint: str, validate: Callable[[Any], None]):
        rec = await self._record(request, "openai", endpoint)
        try:
            self._auth(request, "openai")
            fault = self.faults.take(request.path, skip=("evict",))
            rec.fault = fault.kind if fault else None
            if fault and fault.kind == "drop" and fault.after_events <= 0:
                return rec, None, None, fault, await _drop(request, rec)
            if fault and fault.kind in ("429", "529", "500", "status"):
                return rec, None, None, fault, self._fault_error(rec, fault, "openai")
            body = await self._parse(rec)
            validate(body)
        except ApiError as err:
            return rec, None, None, None, self._error_response(rec, err, "openai")
        model = body["model"]
        retention = OPENAI_CACHE_TTL_24H_S if body.get("prompt_cache_retention") == "24h" else OPENAI_CACHE_TTL_S
        usage = self.cache.bill_automatic(("openai", model), openai_blocks(body), self.now(),
                                          ttl_seconds=retention, min_cacheable=self.min_cacheable or 1024)
        rec.conversation = str(conversation_key(request.headers, body))
        choice = choose(self.script, request.headers, body, endpoint)
        rec.usage, rec.track, rec.turn = usage, choice.track, choice.index
        return rec, body, choice, fault, None

    async def h_chat(self, request: web.Request) -> web.StreamResponse:
        rec, body, choice, fault, early = await self._openai(request, "chat", validate_chat_body)
        if early is not None:
            return early
        completion = answers.chat_completion(choice.turn, body, rec.usage)

        def events() -> list[bytes]:
            include = bool((body.get("stream_options") or {}).get("include_usage"))
            return [answers.sse(None, c) for c in answers.chat_chunks(completion, include)] + [answers.sse(None, "[DONE]")]

        def error_event(f: Fault) -> bytes:
            return answers.sse(None, {"error": {"message": f.message or "The server had an error",
                                                "type": f.error_type or "server_error", "param": None,
                                                "code": None}})
        return await self._openai_answer(request, rec, body, fault, completion, completion["usage"]["completion_tokens"],
                                         events, error_event)

    async def h_responses(self, request: web.Request) -> web.StreamResponse:
        rec, body, choice, fault, early = await self._openai(request, "responses", validate_responses_body)
        if early is not None:
            return early
        resp = answers.response_object(choice.turn, body, rec.usage)

        def error_event(f: Fault) -> bytes:
            return answers.sse("error", {"type": "error", "code": f.error_type or "server_error",
                                         "message": f.message or "The server had an error", "param": None,
                                         "sequence_number": 0})
        return await self._openai_answer(request, rec, body, fault, resp, resp["usage"]["output_tokens"],
                                         lambda: [answers.sse(ev["type"], ev) for ev in answers.response_events(resp)],
                                         error_event)

    async def _openai_answer(self, request: web.Request, rec, body: dict, fault: Fault | None, answer: dict,
                             output_tokens: int, events: Callable[[], list[bytes]],
                             error_event: Callable[[Fault], bytes]) -> web.StreamResponse:
        """Both OpenAI endpoints once their answer is built: the JSON object, or ``events()`` streamed."""
        rec.usage.output_tokens = output_tokens
        rec.answer = answer
        if not body.get("stream"):
            if fault and fault.kind == "error_event":
                return self._fault_error(rec, fault, "openai")
            rec.status = 200
            return self._json(answer)
        return await self._stream(request, rec, events(), fault, error_event)

    # ---------------------------------------------------------------- streaming
    async def _stream(self, request: web.Request, rec: RecordedRequest, events: list[bytes],
                      fault: Fault | None, error_event: Callable[[Fault], bytes]) -> web.StreamResponse:
        resp = web.StreamResponse(status=200, headers={
            "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache", **_request_id()})
        rec.status = 200
        await resp.prepare(request)
        delay = self.chunk_delay + (fault.delay if fault and fault.kind == "slow" else 0.0)
        silences = dict(fault.silences) if fault and fault.kind == "slow" else {}
        try:
            for n, chunk in enumerate(events):
                if fault and fault.kind == "error_event" and n == max(1, fault.after_events):
                    await resp.write(error_event(fault))
                    rec.error = "error_event"
                    return resp
                if fault and fault.kind == "drop" and n == fault.after_events:
                    rec.error = "dropped"
                    return await _drop(request, rec, resp)
                if n in silences:
                    await asyncio.sleep(silences[n])
                if delay:
                    await asyncio.sleep(delay)
                await resp.write(chunk)
            if len(events) in silences:  # a pause after the last event, before the stream's end
                await asyncio.sleep(silences[len(events)])
            await resp.write_eof()
        except (ConnectionResetError, asyncio.CancelledError):
            rec.error = rec.error or "client disconnected"
            raise
        return resp

    async def h_unknown(self, request: web.Request) -> web.StreamResponse:
        rec = await self._record(request, "other", "other")
        rec.status = 404
        return web.json_response({"type": "error", "error": {"type": "not_found_error",
                                                             "message": f"Not found: {request.path}"}}, status=404)

def _json_text(obj: Any) -> str:
    return dumps(obj).decode()


def _request_id() -> dict[str, str]:
    return {"request-id": answers.new_id("req_")}


async def _drop(request: web.Request, rec: RecordedRequest, resp: web.StreamResponse | None = None):
    """Close the connection without finishing the response."""
    rec.error = "dropped"
    transport = request.transport
    if transport is not None:
        transport.abort()
    raise asyncio.CancelledError()


def make_app(emulator: Emulator | None = None, **opts: Any) -> web.Application:
    return (emulator or Emulator(**opts)).app()
