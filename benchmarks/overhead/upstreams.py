"""The servers of the benchmark, each run in its own process by ``proxy_overhead.py --serve-...``.

``serve_upstream``: a raw asyncio server that reads the body and answers an
Anthropic-shaped SSE stream with a Content-Length. ``nodelay`` sets
TCP_NODELAY and writes head and body in one send; ``nagle`` writes the head,
then the body in a second send, with Nagle on (the delayed-ACK stall, see
``proxy_overhead.py``).

``serve_bare``: the bare aiohttp forward scalpel is compared with (read the
body, forward it, stream the answer back; nothing else).
"""

from __future__ import annotations

import asyncio
import json
import socket


def _sse() -> bytes:
    usage = {"input_tokens": 12, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 40000, "output_tokens": 1}
    events = [("message_start", {"type": "message_start", "message": {
        "id": "msg_bench", "type": "message", "role": "assistant", "model": "claude-sonnet-4-6", "content": [],
        "stop_reason": None, "stop_sequence": None, "usage": usage}}),
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        *[("content_block_delta", {"type": "content_block_delta", "index": 0,
                                   "delta": {"type": "text_delta", "text": f"word{i} "}}) for i in range(20)],
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                           "usage": {"output_tokens": 40}}),
        ("message_stop", {"type": "message_stop"})]
    return b"".join(f"event: {e}\ndata: {json.dumps(d, separators=(',', ':'))}\n\n".encode() for e, d in events)


SSE = _sse()
END = b'"message_stop"}\n\n'  # how every answer ends (the client checks it read a whole one)


def serve_upstream(port: int, style: str) -> None:
    """nodelay: TCP_NODELAY, head and body in one send. nagle: Nagle on, two sends."""
    head = (f"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\n"
            f"Content-Length: {len(SSE)}\r\n\r\n").encode()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        sock = writer.get_extra_info("socket")
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1 if style == "nodelay" else 0)
        try:
            while True:
                raw = await reader.readuntil(b"\r\n\r\n")
                headers = {k.strip().lower(): v.strip() for k, _, v in
                           (line.partition(":") for line in raw.decode("latin-1").split("\r\n")[1:] if line)}
                if "content-length" in headers:
                    await reader.readexactly(int(headers["content-length"]))
                elif "chunked" in headers.get("transfer-encoding", ""):
                    while (size := int((await reader.readline()).split(b";")[0], 16)):
                        await reader.readexactly(size + 2)
                    await reader.readline()
                if style == "nodelay":
                    writer.write(head + SSE)
                else:
                    writer.write(head)
                    await writer.drain()
                    writer.write(SSE)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, ValueError):
            writer.close()

    async def main() -> None:
        server = await asyncio.start_server(handle, "127.0.0.1", port, backlog=256)
        await server.serve_forever()

    asyncio.run(main())


def serve_bare(port: int, upstream: str) -> None:
    """The bare forward: read the body, forward it, stream the answer back. Nothing else."""
    import aiohttp
    from aiohttp import web

    async def ctx(app):
        app["s"] = aiohttp.ClientSession(auto_decompress=False, timeout=aiohttp.ClientTimeout(total=None),
                                         connector=aiohttp.TCPConnector(limit=256))
        yield
        await app["s"].close()

    async def handler(request: web.Request) -> web.StreamResponse:
        body = await request.read()
        headers = {k: v for k, v in request.headers.items() if k.lower() not in ("host", "content-length", "connection")}
        async with request.app["s"].request(request.method, upstream + request.path_qs, data=body, headers=headers) as up:
            resp = web.StreamResponse(status=up.status, headers={"Content-Type": up.headers.get("Content-Type", "")})
            await resp.prepare(request)
            async for chunk in up.content.iter_any():
                await resp.write(chunk)
            await resp.write_eof()
            return resp

    app = web.Application(client_max_size=1 << 30)
    app.cleanup_ctx.append(ctx)
    app.router.add_route("*", "/{tail:.*}", handler)
    web.run_app(app, host="127.0.0.1", port=port, access_log=None, print=None)


def add_serve_flags(ap) -> None:
    """The hidden flags a benchmark script re-runs itself with to serve one of the two servers above."""
    import argparse

    ap.add_argument("--serve-upstream", nargs=2, metavar=("PORT", "STYLE"), help=argparse.SUPPRESS)
    ap.add_argument("--serve-bare", nargs=2, metavar=("PORT", "UPSTREAM"), help=argparse.SUPPRESS)


def parse_or_serve(ap, argv=None):
    """A benchmark script's arguments (``add_serve_flags`` added to ``ap`` here); None when this run
    only served a server (exit 0) or the real capture the bodies grow is missing (said; exit 2):
    ``(args, exit code)``."""
    import sys

    from overhead.bodies import CAPTURE

    add_serve_flags(ap)
    args = ap.parse_args(argv)
    if serve_if_asked(args):
        return None, 0
    if not CAPTURE.exists():
        print(f"needs the real Claude Code 2.1.332 capture at {CAPTURE} (../shared/corpus)", file=sys.stderr)
        return None, 2
    return args, 0


def serve_if_asked(args) -> bool:
    """Serve (until stopped) what ``add_serve_flags``' flags ask for; False when they ask for nothing."""
    if args.serve_upstream:
        serve_upstream(int(args.serve_upstream[0]), args.serve_upstream[1])
        return True
    if args.serve_bare:
        serve_bare(int(args.serve_bare[0]), args.serve_bare[1])
        return True
    return False
