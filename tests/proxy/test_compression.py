"""Compressed answers reach the client as the upstream's exact bytes; the tap reads a copy.

The emulator never compresses, so this test's upstream is a small aiohttp app
that answers gzip-encoded JSON and SSE, like a real API behind a CDN may.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import socket
import threading
import time

import pytest
from aiohttp import web

from scalpel_desktop.config import Config
from scalpel_desktop.runtime import Runtime

USAGE = {"input_tokens": 11, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 4096, "output_tokens": 5}
SSE = (
    "event: message_start\ndata: " + json.dumps({"type": "message_start", "message": {"usage": dict(USAGE, output_tokens=1)}})
    + "\n\nevent: message_delta\ndata: " + json.dumps({"type": "message_delta", "usage": {"output_tokens": 5}})
    + "\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
).encode()
JSON = json.dumps({"type": "message", "content": [], "usage": USAGE}).encode()
GZ_SSE, GZ_JSON = gzip.compress(SSE, mtime=0), gzip.compress(JSON, mtime=0)


async def handler(request: web.Request) -> web.StreamResponse:
    body = json.loads(await request.read())
    assert request.headers.get("Accept-Encoding") == "gzip"  # the client's own header, nothing added
    if body.get("stream"):
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Content-Encoding": "gzip"})
        await resp.prepare(request)
        for i in range(0, len(GZ_SSE), 17):
            await resp.write(GZ_SSE[i : i + 17])
        await resp.write_eof()
        return resp
    return web.Response(body=GZ_JSON, headers={"Content-Type": "application/json", "Content-Encoding": "gzip"})


@pytest.fixture
def gzip_upstream():
    ready, holder = threading.Event(), {}

    def run():
        loop = asyncio.new_event_loop()
        app = web.Application()
        app.router.add_post("/v1/messages", handler)
        runner = web.AppRunner(app, access_log=None)
        loop.run_until_complete(runner.setup())
        site = web.TCPSite(runner, "127.0.0.1", 0)
        loop.run_until_complete(site.start())
        holder["port"], holder["loop"] = runner.addresses[0][1], loop
        ready.set()
        loop.run_forever()
        loop.run_until_complete(runner.cleanup())

    t = threading.Thread(target=run, daemon=True)
    t.start()
    ready.wait(10)
    yield f"http://127.0.0.1:{holder['port']}"
    holder["loop"].call_soon_threadsafe(holder["loop"].stop)
    t.join(5)


def raw_exchange(port: int, body: bytes) -> bytes:
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(
        (f"POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
         f"Accept-Encoding: gzip\r\nConnection: close\r\nContent-Length: {len(body)}\r\n\r\n").encode() + body
    )
    data = b""
    while chunk := s.recv(65536):
        data += chunk
    s.close()
    return data


def dechunk(body: bytes) -> bytes:
    out, rest = b"", body
    while rest:
        size_line, _, rest = rest.partition(b"\r\n")
        size = int(size_line, 16)
        if size == 0:
            break
        out, rest = out + rest[:size], rest[size + 2 :]
    return out


def test_gzip_answers_pass_verbatim_and_usage_is_tapped(gzip_upstream):
    rt = Runtime(Config.load(), {"anthropic_upstream": gzip_upstream}, port=0).start()
    try:
        for stream, expected in ((False, GZ_JSON), (True, GZ_SSE)):
            body = json.dumps({"model": "m", "stream": stream, "messages": []}).encode()
            raw = raw_exchange(rt.port, body)
            head, _, payload = raw.partition(b"\r\n\r\n")
            headers = head.decode().lower()
            assert "content-encoding: gzip" in headers
            got = dechunk(payload) if "transfer-encoding: chunked" in headers else payload
            assert got == expected  # the upstream's compressed bytes, untouched
        deadline = time.monotonic() + 5
        while rt.status()["tokens_out"] < 10 and time.monotonic() < deadline:
            time.sleep(0.02)
        st = rt.status()
        assert st["tokens_in"] == 2 * (11 + 4096) and st["tokens_out"] == 10
    finally:
        rt.stop()
