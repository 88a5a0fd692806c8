"""Read the provider's usage counts from a response while it streams past.

The proxy forwards every chunk to the client first and then shows it to a
``UsageTap``: the tap never holds a chunk back, never changes one, and never
raises (any surprise turns it off and the response still flows).

What it understands:

- Anthropic JSON (``usage`` of the message) and SSE: ``message_start``
  carries the input side (uncached input, cache writes with the 5m/1h split,
  cache reads), ``message_delta`` the final output count (and, on newer API
  versions, updated input figures): later non-null fields win.
- OpenAI Chat JSON and SSE: the final chunk's ``usage`` (sent when the client
  asked for ``stream_options.include_usage``; other chunks carry ``null``).
- OpenAI Responses JSON and SSE: ``response.completed`` (or ``incomplete`` /
  ``failed``) carries ``response.usage``.
- Error bodies and error events: their ``error.type`` is kept in ``.error``.
- An Anthropic message's ``id`` and its ``diagnostics`` (the provider's cache
  diagnosis, ``wire/cache_diagnosis.py``): ``message()``.
- An Anthropic answer's ``stop_reason`` (``message_delta`` or the JSON
  message): ``stop_reason``, the cache keeper's cue (``proxy/keeper.py``).

SSE is parsed incrementally: lines may be split anywhere across chunks, CRLF
or LF, unknown events and pings are skipped. A compressed body
(``Content-Encoding: gzip`` or ``deflate``; ``br``/``zstd`` when a decoder is
importable) is decompressed from a copy: the client still gets the original
bytes. Pure: no aiohttp here.
"""

from __future__ import annotations

import zlib
from typing import Any, Callable

from scalpel_desktop.wire.usage import Usage
from scalpel_desktop.wire.jsoncodec import loads

ABSENT = object()  # ``message()``: the answer carried no ``diagnostics``
MAX_JSON_BYTES = 32 * 1024 * 1024  # a JSON answer larger than this is not tapped
MAX_SSE_EVENT_BYTES = 8 * 1024 * 1024  # one SSE event larger than this is skipped

_INTERESTING_EVENTS = frozenset(
    {
        "message_start",
        "message_delta",
        "error",
        "response.completed",
        "response.incomplete",
        "response.failed",
    }
)


class _Decoder:
    """Incremental decompression of a copy of the body."""

    def __init__(self, encoding: str):
        self.encoding = encoding
        self._obj: Any = None
        self._deflate_probe = b""
        if encoding == "gzip" or encoding == "x-gzip":
            self._obj = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif encoding == "deflate":
            self._obj = None  # decided on the first bytes: zlib-wrapped or raw
        elif encoding == "br":
            import brotli  # type: ignore[import-not-found]  # optional

            self._obj = brotli.Decompressor()
        elif encoding == "zstd":
            try:
                from compression import zstd  # type: ignore[import-not-found]  # Python 3.14

                self._obj = zstd.ZstdDecompressor()
            except ImportError:
                import zstandard  # type: ignore[import-not-found]  # optional

                self._obj = zstandard.ZstdDecompressor().decompressobj()
        else:
            raise ValueError(f"unsupported content-encoding {encoding!r}")

    def feed(self, data: bytes) -> bytes:
        if self.encoding == "deflate" and self._obj is None:
            self._deflate_probe += data
            if len(self._deflate_probe) < 2:
                return b""
            data, self._deflate_probe = self._deflate_probe, b""
            # zlib header: CMF/FLG pair divisible by 31 with method 8.
            wrapped = (data[0] & 0x0F) == 8 and ((data[0] << 8) | data[1]) % 31 == 0
            self._obj = zlib.decompressobj(zlib.MAX_WBITS if wrapped else -zlib.MAX_WBITS)
        if self.encoding == "br":
            return self._obj.process(data)
        return self._obj.decompress(data)


class UsageTap:
    """Feed it the response body chunk by chunk; ask ``usage`` at the end."""

    def __init__(self, content_type: str = "", content_encoding: str = ""):
        ct = (content_type or "").split(";", 1)[0].strip().lower()
        if "event-stream" in ct:
            self.kind = "sse"
        elif "json" in ct:
            self.kind = "json"
        else:
            self.kind = ""  # not a body we understand: stays off
        self._error = ""
        self._finished = False
        self._on = bool(self.kind)
        self._decoder: _Decoder | None = None
        enc = (content_encoding or "").strip().lower()
        if self._on and enc and enc != "identity":
            try:
                if "," in enc:
                    raise ValueError("layered encodings")
                self._decoder = _Decoder(enc)
            except (ValueError, ImportError):
                self._on = False
        self._json_parts: list[bytes] = []
        self._json_size = 0
        # SSE state
        self._tail = b""
        self._event = ""
        self._data: list[bytes] = []
        self._data_size = 0
        self._anthropic: dict[str, Any] | None = None
        self._openai: dict[str, Any] | None = None
        self._message_id: str | None = None
        self._diagnostics: Any = ABSENT
        self._stop_reason = ""  # the Anthropic answer's ``stop_reason`` (the cache keeper's cue)

    @property
    def active(self) -> bool:
        return self._on

    # -- feeding -----------------------------------------------------------
    def feed(self, chunk: bytes) -> None:
        if not self._on or not chunk:
            return
        try:
            data = self._decoder.feed(chunk) if self._decoder is not None else chunk
            if data:
                self._consume(data)
        except Exception:  # noqa: BLE001 - the tap must never disturb the response
            self._on = False

    def _consume(self, data: bytes) -> None:
        if self.kind == "json":
            self._json_size += len(data)
            if self._json_size > MAX_JSON_BYTES:
                self._on = False
                self._json_parts.clear()
                return
            self._json_parts.append(data)
            return
        buf = self._tail + data if self._tail else data
        lines = buf.split(b"\n")
        self._tail = lines.pop()
        if len(self._tail) > MAX_SSE_EVENT_BYTES:
            self._tail = b""
            self._skip_event()
        for line in lines:
            self._line(line[:-1] if line.endswith(b"\r") else line)

    def _skip_event(self) -> None:
        self._event, self._data, self._data_size = "", [], 0

    def _line(self, line: bytes) -> None:
        if not line:
            self._dispatch()
            return
        if line.startswith(b":"):
            return  # comment / keep-alive
        name, _, value = line.partition(b":")
        if value.startswith(b" "):
            value = value[1:]
        if name == b"data":
            self._data_size += len(value)
            if self._data_size > MAX_SSE_EVENT_BYTES:
                self._data = []
                return
            self._data.append(value)
        elif name == b"event":
            self._event = value.decode("utf-8", "replace")

    def _dispatch(self) -> None:
        event, data = self._event, b"\n".join(self._data)
        self._skip_event()
        if not data or data == b"[DONE]":
            return
        if event not in _INTERESTING_EVENTS and b'"usage"' not in data and b'"error"' not in data:
            return  # a delta or a ping: nothing to read, nothing to parse
        try:
            obj = loads(data)
        except ValueError:
            return
        if isinstance(obj, dict):
            self._observe(obj)

    # -- reading -----------------------------------------------------------
    def _observe(self, obj: dict[str, Any]) -> None:
        typ = obj.get("type")
        if typ == "message_start":
            msg = obj.get("message")
            self._note_message(msg)
            usage = msg.get("usage") if isinstance(msg, dict) else None
            if isinstance(usage, dict):
                self._anthropic = dict(usage)
            return
        if typ == "message_delta":
            delta = obj.get("delta")
            if isinstance(delta, dict) and isinstance(delta.get("stop_reason"), str):
                self._stop_reason = delta["stop_reason"][:40]
            usage = obj.get("usage")
            if isinstance(usage, dict):
                base = self._anthropic if self._anthropic is not None else {}
                base.update({k: v for k, v in usage.items() if v is not None})
                self._anthropic = base
            return
        if typ in ("response.completed", "response.incomplete", "response.failed"):
            resp = obj.get("response")
            if isinstance(resp, dict):
                if isinstance(resp.get("usage"), dict):
                    self._openai = resp["usage"]
                if typ == "response.failed":
                    self._note_error(resp.get("error"))
            return
        if typ == "error" or "error" in obj:
            self._note_error(obj.get("error", obj))
            return
        usage = obj.get("usage")
        if isinstance(usage, dict):  # OpenAI Chat final chunk
            self._openai = usage

    def _note_message(self, msg: Any) -> None:
        if not isinstance(msg, dict):
            return
        if isinstance(msg.get("id"), str):
            self._message_id = msg["id"][:200]
        if isinstance(msg.get("stop_reason"), str):  # (a JSON answer's; a stream's comes in message_delta)
            self._stop_reason = msg["stop_reason"][:40]
        if "diagnostics" in msg:
            self._diagnostics = msg["diagnostics"]

    def _note_error(self, err: Any) -> None:
        if isinstance(err, dict):
            label = err.get("type") or err.get("code") or "error"
            self._error = str(label)[:100]
        elif err:
            self._error = "error"

    def _finish_json(self) -> None:
        raw = b"".join(self._json_parts)
        self._json_parts.clear()
        if not raw.strip():
            return
        try:
            doc = loads(raw)
        except ValueError:
            return
        if not isinstance(doc, dict):
            return
        if "error" in doc and doc.get("type") in ("error", None):
            self._note_error(doc.get("error"))
        if doc.get("type") == "message":
            self._note_message(doc)
        usage = doc.get("usage")
        if not isinstance(usage, dict):
            return
        if "prompt_tokens" in usage or "input_tokens_details" in usage or doc.get("object") in (
            "chat.completion",
            "response",
        ):
            self._openai = usage
        else:
            self._anthropic = usage

    @property
    def error(self) -> str:
        """The provider's error type when the body or a stream event was an error, else ""."""
        self._finish()
        return self._error

    def message(self) -> tuple[str | None, Any]:
        """The Anthropic message's ``id`` (None: none seen) and its ``diagnostics`` value (``ABSENT`` when
        the answer carried none). Call after the last chunk."""
        self._finish()
        return self._message_id, self._diagnostics

    @property
    def stop_reason(self) -> str:
        """Why the Anthropic answer ended (``end_turn``, ``tool_use``, ...; "" when not seen)."""
        self._finish()
        return self._stop_reason

    def usage(self) -> Usage | None:
        """The provider's counts, or None when the response carried none. Call after the last chunk."""
        self._finish()
        return _to_usage(self._anthropic, Usage.from_anthropic) or _to_usage(self._openai, Usage.from_openai)

    def _finish(self) -> None:
        if self._finished:
            return
        self._finished = True
        if self.kind == "json" and self._on:
            try:
                self._finish_json()
            except Exception:  # noqa: BLE001
                self._on = False
        if self.kind == "sse" and self._on:
            try:
                if self._tail:
                    line, self._tail = self._tail, b""
                    self._line(line.rstrip(b"\r"))
                if self._data:
                    self._dispatch()  # a stream that ended without the final blank line
            except Exception:  # noqa: BLE001
                self._on = False


def _to_usage(raw: dict[str, Any] | None, build: Callable[[Any], Usage]) -> Usage | None:
    if raw is None:
        return None
    return build(raw)


def decoded(body: bytes, content_encoding: str) -> bytes | None:
    """A whole body as its ``Content-Encoding`` says to read it; None when this cannot decode it (an
    encoding without a decoder here, layered encodings, corrupt bytes)."""
    enc = (content_encoding or "").strip().lower()
    if not enc or enc == "identity":
        return body
    try:
        if "," in enc:
            return None
        return _Decoder(enc).feed(body)
    except Exception:  # noqa: BLE001 - unreadable: the caller decides what that means
        return None


def tap_body(body: bytes, content_type: str, content_encoding: str = "", chunk: int = 0) -> UsageTap:
    """Tap a whole body at once (tests, the bench); ``chunk`` > 0 splits it like a network would."""
    tap = UsageTap(content_type, content_encoding)
    if chunk <= 0:
        tap.feed(body)
    else:
        for i in range(0, len(body), chunk):
            tap.feed(body[i : i + chunk])
    return tap
