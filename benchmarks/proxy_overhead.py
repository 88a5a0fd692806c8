"""What the proxy adds, side by side in one run: scalpel, a bare aiohttp forward, direct calls.

    python benchmarks/proxy_overhead.py [--quick] [--out FILE.md]

Paths, each in its own process, each called on its own keep-alive connection
(``http.client``), one after the other with the same body in the same round:

- ``direct``: the upstream itself (a raw asyncio server: reads the body, answers
  an Anthropic-shaped SSE stream with a Content-Length);
- ``bare``: a bare aiohttp forward (a dozen lines: read the body, forward it,
  stream the answer back; nothing else);
- ``scalpel``: ``scalpel start``, default settings (the pipeline that ships,
  ledger included), its own temporary SCALPEL_HOME.

Two upstreams. ``nodelay`` sets TCP_NODELAY and writes head and body in one
send. ``nagle`` writes the head, then the body in a second send, with Nagle on,
as some servers do: on a keep-alive connection the receiver delays its ACK of
the head (Linux: up to 40 ms, once the connection has left quick-ACK mode), and
Nagle holds the body until that ACK comes, so every such response stalls about
40 ms (SPEC section 9, last paragraph). Every keep-alive client pays it, a bare
forward and scalpel alike; calls on fresh connections would not. The receiver
delays its ACK only in its interactive (ping-pong) mode, which a connection
leaves after an idle gap longer than the ACK timeout: the stall shows in the
``back to back`` rows, and not where the benchmark waits for idle between calls.

Bodies: the longest main-thread request of the real Claude Code 2.1.332 capture
in ../shared/corpus/wire, grown to 100 KB, 1 MB, 3 MB and 10 MB by appending
the capture's own tool_use / tool_result pairs again, in order, with fresh
tool ids (the table gives each size's message count: the capture's results are
small, about 300 B, so these bodies hold many messages, and per-message work
shows). ``--growth reads`` grows them as the earlier benchmark did instead: Read
calls answered with 400-line synthetic files, about 30 KB each. Modes:

- ``growing``: each request is the previous one plus one turn (Claude Code's normal);
- ``retry``: the same body again;
- ``first sighting``: a conversation never seen before (a new session id, same size):
  a resume, a proxy restart, a conversation evicted from the memo;
- ``back to back``: growing, with no idle wait between calls (elsewhere the
  benchmark waits until no server process uses CPU before and after each call,
  so a call is never measured while another path still works in the background).

Figures: added latency over direct (paired per round: path minus direct), p50
and p95; CPU time of the path's own server process per request; scalpel's RSS
after 1,000 requests over 10 conversations of about 2.6 MB; 200 concurrent
streams per path (100 KB first sightings): errors and p99. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CAPTURE = REPO.parent / "shared" / "corpus" / "wire" / "claude-code-2.1.332" / "requests.jsonl"
SIZES = {"100 KB": 100_000, "1 MB": 1_000_000, "3 MB": 3_000_000, "10 MB": 10_000_000}
FULL_ROUNDS = {"100 KB": 30, "1 MB": 20, "3 MB": 12, "10 MB": 6}
QUICK_ROUNDS = {"100 KB": 8, "1 MB": 6, "3 MB": 4, "10 MB": 2}
MODES = ("growing", "retry", "first sighting", "back to back")


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


# -- servers (each `python proxy_overhead.py --serve-... PORT ...` in its own process) ---------

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
        server = await asyncio.start_server(handle, "127.0.0.1", port, backlog=128)
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


# -- bodies ------------------------------------------------------------------------------------

def compact(obj) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def load_capture() -> tuple[dict, dict, list[tuple[dict, dict]]]:
    """(the longest main-thread body, its headers, every real tool_use/tool_result pair)."""
    rows = [json.loads(line) for line in CAPTURE.read_text(encoding="utf-8").splitlines() if line.strip()]
    main = [r for r in rows if r["run"] == "main" and "x-claude-code-agent-id" not in r["headers"]]
    row = max(main, key=lambda r: len(r["body"]["messages"]))
    uses: dict[str, dict] = {}
    pairs: dict[str, tuple[dict, dict]] = {}
    for r in rows:
        for m in r["body"]["messages"]:
            for block in m["content"] if isinstance(m["content"], list) else []:
                if block.get("type") == "tool_use":
                    uses[block["id"]] = block
                elif block.get("type") == "tool_result" and block["tool_use_id"] in uses:
                    pairs.setdefault(block["tool_use_id"], (uses[block["tool_use_id"]], block))
    headers = {k: v for k, v in row["headers"].items() if k not in ("host", "content-length", "connection")}
    headers["x-api-key"] = "sk-ant-bench-dummy"
    return row["body"], headers, list(pairs.values())


class Conversation:
    """A Claude Code 2.1.332 conversation of about ``size`` bytes, with its own session
    id and tool ids, that grows by one real tool_use/tool_result pair per turn."""

    growth = "real"  # or "reads": Read calls of 400-line files, as the earlier benchmark grew them

    def __init__(self, capture, size: int, tag: str):
        base, headers, self.pairs = capture
        self.session = str(uuid.uuid4())
        old = headers.get("x-claude-code-session-id", "")
        self.headers = dict(headers, **{"x-claude-code-session-id": self.session})
        self.doc = copy.deepcopy(base)
        meta = self.doc.get("metadata") or {}
        if old and isinstance(meta.get("user_id"), str):
            meta["user_id"] = meta["user_id"].replace(old, self.session)
        self.doc["stream"] = True
        self.tag, self.turns, self.size = tag, 0, len(compact(self.doc))
        while self.size < size:
            self.size += self.add_turn()

    def add_turn(self) -> int:
        tid = f"toolu_01{self.tag}{self.turns:08d}"
        if self.growth == "reads":
            path = f"/home/user/proj/src/mod{self.turns}.py"
            use = {"type": "tool_use", "id": tid, "name": "Read", "input": {"file_path": path}}
            result = {"tool_use_id": tid, "type": "tool_result", "content": "\n".join(
                f"{i + 1:>6}\u2192    value_{self.turns}_{i} = compute(value_{self.turns}_{i - 1}, {i}) # step {i}"
                for i in range(400))}
        else:
            use, result = self.pairs[self.turns % len(self.pairs)]
        self.turns += 1
        turn = [{"role": "assistant", "content": [dict(use, id=tid)]},
                {"role": "user", "content": [dict(result, tool_use_id=tid)]}]
        self.doc["messages"].extend(turn)
        return len(compact(turn))  # about: one "," more

    def body(self) -> bytes:
        return compact(self.doc)


# -- processes and the client --------------------------------------------------------------------

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listening on {port}")


def cpu_ms(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000.0 / os.sysconf("SC_CLK_TCK")


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def settle(pids: list[int], quiet_ms: float = 20.0, limit_s: float = 3.0) -> None:
    """Until no server process has used CPU for ``quiet_ms``."""
    deadline = time.monotonic() + limit_s
    last, since = [cpu_ms(p) for p in pids], time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.005)
        now = [cpu_ms(p) for p in pids]
        if now != last:
            last, since = now, time.monotonic()
        elif (time.monotonic() - since) * 1000 >= quiet_ms:
            return


class Path_:
    def __init__(self, name: str, port: int, pid: int):
        self.name, self.port, self.pid = name, port, pid
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)

    def call(self, body: bytes, headers: dict) -> float:
        t0 = time.perf_counter()
        self.conn.request("POST", "/v1/messages?beta=true", body=body, headers=headers)
        resp = self.conn.getresponse()
        data = resp.read()
        took = time.perf_counter() - t0
        if resp.status != 200 or not data.endswith(b'"message_stop"}\n\n'):
            raise RuntimeError(f"{self.name}: HTTP {resp.status}")
        return took


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


# -- the measurements ----------------------------------------------------------------------------

def first_sighting(body: bytes, conv: Conversation, n: int) -> tuple[bytes, dict]:
    """``conv``'s body as a conversation never seen: another session id, other tool ids."""
    session = str(uuid.uuid4())
    tag = f"{n:06d}"
    out = body.replace(conv.session.encode(), session.encode()).replace(
        f"toolu_01{conv.tag}".encode(), f"toolu_01{tag}".encode())
    return out, dict(conv.headers, **{"x-claude-code-session-id": session})


def measure(paths: list[Path_], mode: str, size: int, rounds: int, capture, tags) -> tuple[dict, dict, int]:
    """(latencies per path, CPU ms per request per path, message count)."""
    pids = [p.pid for p in paths]
    conv = Conversation(capture, size, next(tags))
    body, headers = conv.body(), conv.headers
    for p in paths:  # warm: every path has seen this conversation once
        p.call(body, headers)
    settle(pids)
    totals: dict[str, list[float]] = {p.name: [] for p in paths}
    cpu: dict[str, list[float]] = {p.name: [] for p in paths}
    start = {p.name: cpu_ms(p.pid) for p in paths}
    for i in range(rounds):
        if mode in ("growing", "back to back"):
            conv.add_turn()
            body, headers = conv.body(), conv.headers
        elif mode == "first sighting":
            body, headers = first_sighting(conv.body(), conv, int(next(tags)))
        for p in paths[i % len(paths):] + paths[: i % len(paths)]:  # rotate who goes first
            if mode != "back to back":
                settle(pids)
            c0 = cpu_ms(p.pid)
            totals[p.name].append(p.call(body, headers))
            if mode != "back to back":
                settle(pids)
                cpu[p.name].append(cpu_ms(p.pid) - c0)
    if mode == "back to back":
        settle(pids)
        cpu = {p.name: [(cpu_ms(p.pid) - start[p.name]) / rounds] for p in paths}
    return totals, cpu, len(conv.doc["messages"])


def table_rows(upstream: str, mode: str, label: str, nmsgs: int, totals: dict, cpu: dict) -> list[str]:
    direct = totals["direct"]
    rows = [(f"| {upstream} | {mode} | {label} | {nmsgs:,} | direct | {statistics.median(direct) * 1000:.1f} (total) "
             f"| {pct(direct, 0.95) * 1000:.1f} (total) | {statistics.mean(cpu['direct']):.1f} | {len(direct)} |")]
    for name in ("bare", "scalpel"):
        added = [(a - d) * 1000 for a, d in zip(totals[name], direct)]
        rows.append(f"| {upstream} | {mode} | {label} | {nmsgs:,} | {name} | {statistics.median(added):+.1f} "
                    f"| {pct(added, 0.95):+.1f} | {statistics.mean(cpu[name]):.1f} | {len(added)} |")
    return rows


def memory(scalpel: Path_, capture, requests: int, tags) -> tuple[float, float, float]:
    """scalpel's RSS (MB) before, after half and after ``requests`` requests over 10
    conversations of about 2.6 MB, one turn each in turn, back to back."""
    growth, Conversation.growth = Conversation.growth, "reads"  # as the issue measured it, and ~100x faster
    convs = [Conversation(capture, 2_600_000, next(tags)) for _ in range(10)]
    Conversation.growth = growth
    before = rss_mb(scalpel.pid)
    half = before
    for i in range(requests):
        c = convs[i % len(convs)]
        c.add_turn()
        scalpel.call(c.body(), c.headers)
        if i + 1 == requests // 2:
            half = rss_mb(scalpel.pid)
        if (i + 1) % 100 == 0:
            print(f"  {i + 1} requests, RSS {rss_mb(scalpel.pid):.0f} MB", file=sys.stderr)
    time.sleep(1.0)
    return before, half, rss_mb(scalpel.pid)


async def _concurrent(port: int, bodies: list[tuple[bytes, dict]]) -> tuple[int, list[float]]:
    import aiohttp

    async def one(session, body, headers) -> float | None:
        t0 = time.perf_counter()
        try:
            async with session.post(f"http://127.0.0.1:{port}/v1/messages?beta=true", data=body, headers=headers) as r:
                data = await r.read()
                if r.status != 200 or not data.endswith(b'"message_stop"}\n\n'):
                    return None
        except (aiohttp.ClientError, asyncio.TimeoutError, OSError):
            return None
        return time.perf_counter() - t0

    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0),
                                     timeout=aiohttp.ClientTimeout(total=120), auto_decompress=False) as s:
        got = await asyncio.gather(*(one(s, b, h) for b, h in bodies))
    return sum(1 for g in got if g is None), [g for g in got if g is not None]


def start_processes(style: str, procs: list) -> list[Path_]:
    up, bare, sc = free_port(), free_port(), free_port()
    upstream = f"http://127.0.0.1:{up}"
    home = tempfile.mkdtemp(prefix="scalpel-bench-")
    env = dict(os.environ, SCALPEL_HOME=home, HOME=home)
    started = [
        subprocess.Popen([sys.executable, __file__, "--serve-upstream", str(up), style]),
        subprocess.Popen([sys.executable, __file__, "--serve-bare", str(bare), upstream]),
        subprocess.Popen([sys.executable, "-m", "scalpel_desktop", "start", "--quiet", "--port", str(sc),
                          "--anthropic-upstream", upstream], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL),
    ]
    procs.extend(started)
    for port in (up, bare, sc):
        wait_port(port)
    return [Path_(n, port, p.pid) for n, port, p in zip(("direct", "bare", "scalpel"), (up, bare, sc), started)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="a short run: fewer rounds, 200 requests for the RSS figure")
    ap.add_argument("--out", help="also write the markdown to this file")
    ap.add_argument("--growth", choices=("real", "reads"), default="real",
                    help="real: the capture's own tool_use/tool_result pairs again (default); reads: Read calls "
                         "of 400-line synthetic files (~30 KB each, far fewer messages), as the earlier benchmark")
    ap.add_argument("--serve-upstream", nargs=2, help=argparse.SUPPRESS)
    ap.add_argument("--serve-bare", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve_upstream:
        serve_upstream(int(args.serve_upstream[0]), args.serve_upstream[1])
        return 0
    if args.serve_bare:
        serve_bare(int(args.serve_bare[0]), args.serve_bare[1])
        return 0
    if not CAPTURE.exists():
        print(f"needs the real Claude Code 2.1.332 capture at {CAPTURE} (../shared/corpus)", file=sys.stderr)
        return 2

    rounds = QUICK_ROUNDS if args.quick else FULL_ROUNDS
    Conversation.growth = args.growth
    capture = load_capture()
    tags = (f"{i:06d}" for i in range(1, 1_000_000))
    t_start = time.monotonic()
    procs: list[subprocess.Popen] = []
    out: list[str] = []
    try:
        fast = start_processes("nodelay", procs)
        slow = start_processes("nagle", procs)
        rows = []
        for mode in MODES:
            for label, size in SIZES.items():
                print(f"[{time.monotonic() - t_start:5.0f} s] nodelay / {mode} / {label}", file=sys.stderr)
                totals, cpu, nmsgs = measure(fast, mode, size, rounds[label], capture, tags)
                rows += table_rows("nodelay", mode, label, nmsgs, totals, cpu)
        for mode in ("growing", "back to back"):  # the stall needs a reply within the ACK delay: back to back
            for label in (["1 MB"] if args.quick else ["100 KB", "1 MB"]):
                print(f"[{time.monotonic() - t_start:5.0f} s] nagle / {mode} / {label}", file=sys.stderr)
                totals, cpu, nmsgs = measure(slow, mode, SIZES[label], rounds[label], capture, tags)
                rows += table_rows("nagle (2 sends)", mode, label, nmsgs, totals, cpu)

        n_mem = 200 if args.quick else 1000
        print(f"[{time.monotonic() - t_start:5.0f} s] memory: {n_mem} requests", file=sys.stderr)
        before, half, after = memory(fast[2], capture, n_mem, tags)

        print(f"[{time.monotonic() - t_start:5.0f} s] 200 concurrent streams", file=sys.stderr)
        base = Conversation(capture, 100_000, next(tags))
        conc = []
        for p in fast:
            bodies = [first_sighting(base.body(), base, int(next(tags))) for _ in range(200)]
            settle([q.pid for q in fast])
            errors, lat = asyncio.run(_concurrent(p.port, bodies))
            conc.append((p.name, errors, pct(lat, 0.99) * 1000 if lat else float("nan"),
                         statistics.median(lat) * 1000 if lat else float("nan")))

        cmd = "python benchmarks/proxy_overhead.py" + (" --quick" if args.quick else "") + (
            " --growth reads" if args.growth == "reads" else "")
        out.append(f"# proxy overhead ({'quick' if args.quick else 'full'} run), {os.cpu_count()} CPUs, "
                   f"Python {sys.version.split()[0]}, {time.monotonic() - t_start:.0f} s")
        out.append("")
        out.append(f"Command: `{cmd}`. Added latency = path minus direct in the same round (ms); the direct "
                   "rows give the direct call's own time. CPU = the path's server process, ms per request.")
        out.append("")
        out.append("| upstream | mode | body | messages | path | p50 added (ms) | p95 added (ms) | CPU/request (ms) | rounds |")
        out.append("|---|---|---|---:|---|---:|---:|---:|---:|")
        out += rows
        out.append("")
        out.append(f"scalpel RSS over {n_mem:,} requests (10 conversations of about 2.6 MB grown with 30 KB Read "
                   "results, ~90 messages each, one turn each in turn, "
                   f"back to back, after the runs above): {before:.0f} MB before, {half:.0f} MB after "
                   f"{n_mem // 2:,}, {after:.0f} MB after {n_mem:,}.")
        out.append("")
        out.append("200 concurrent streams (100 KB first sightings, one connection each, nodelay upstream):")
        out.append("")
        out.append("| path | errors | p50 (ms) | p99 (ms) |")
        out.append("|---|---:|---:|---:|")
        out += [f"| {name} | {errors} | {p50:.0f} | {p99:.0f} |" for name, errors, p99, p50 in conc]
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
    text = "\n".join(out) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
