"""How much latency the proxy adds, next to a bare aiohttp forward, measured side by side.

    python benchmarks/proxy_overhead.py [--rounds-10k 400] [--rounds-300k 150] [--rounds-3m 60]

Bodies: Claude Code shaped (the tools, system and history of a real 2.1.332
capture from ../shared/corpus/wire, grown with Read/Bash tool_use +
tool_result pairs) of 10 KB, 300 KB and 2.9 MB, ``stream: true``, with Claude
Code's headers. Every path gets the same body in the same round, one after
the other, each on its own keep-alive connection:

- ``direct``: the upstream itself (a minimal aiohttp server in its own
  process: reads the body, answers an Anthropic-shaped SSE stream),
- ``bare``: a bare aiohttp forward in its own process (a few lines: read the
  body, forward it, stream the answer back; nothing else),
- ``scalpel``: ``scalpel start`` in its own process, default settings (the
  pipeline that ships, ledger included),
- ``paused``: ``scalpel start`` with ``paused = true`` (pure pass-through).

Added latency is paired: per round, path time minus direct time; the table
shows the median and p95 of those differences, plus the median time to the
first body byte (TTFB) of the streamed answer per path, and the CPU time the
path's own server process spent per request (scalpel looks at a request after
its answer has streamed back; that work shows up here, not in the latency).
Before and after every call the benchmark waits until no server process uses
CPU, so no call is measured while another path still works in the
background. Then the resident
memory (VmRSS, VmHWM) of the default scalpel process after it served at least
1,000 requests. Nothing here is asserted: it prints figures.
"""

from __future__ import annotations

import argparse
import copy
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CAPTURE = REPO.parent / "shared" / "corpus" / "wire" / "claude-code-2.1.332" / "requests.jsonl"
SIZES = [("10 KB", 10_000), ("300 KB", 300_000), ("2.9 MB", 2_900_000)]

SSE_EVENTS = [
    ("message_start", {"type": "message_start", "message": {"id": "msg_bench", "type": "message", "role": "assistant",
     "model": "claude-sonnet-4-6", "content": [], "stop_reason": None, "stop_sequence": None,
     "usage": {"input_tokens": 12, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 40000, "output_tokens": 1}}}),
    ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
    ("ping", {"type": "ping"}),
    *[("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": f"word{i} "}})
      for i in range(20)],
    ("content_block_stop", {"type": "content_block_stop", "index": 0}),
    ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                       "usage": {"output_tokens": 40}}),
    ("message_stop", {"type": "message_stop"}),
]
SSE_BODY = [f"event: {e}\ndata: {json.dumps(d, separators=(',', ':'))}\n\n".encode() for e, d in SSE_EVENTS]


# -- servers (each runs as `python proxy_overhead.py --serve-... PORT` in its own process) ----------

def serve_upstream(port: int) -> None:
    from aiohttp import web

    async def handler(request: web.Request) -> web.StreamResponse:
        await request.read()
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream; charset=utf-8"})
        await resp.prepare(request)
        for chunk in SSE_BODY:
            await resp.write(chunk)
        await resp.write_eof()
        return resp

    app = web.Application(client_max_size=1 << 30)
    app.router.add_route("*", "/{tail:.*}", handler)
    web.run_app(app, host="127.0.0.1", port=port, access_log=None, print=None)


def serve_bare(port: int, upstream: str) -> None:
    """The bare forward: read the body, forward it, stream the answer back. Nothing else."""
    import aiohttp
    from aiohttp import web

    async def ctx(app):
        app["s"] = aiohttp.ClientSession(auto_decompress=False, timeout=aiohttp.ClientTimeout(total=None))
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

def _capture() -> tuple[dict, dict]:
    """A real Claude Code 2.1.332 request (body, headers), or a synthetic one of the same shape."""
    if CAPTURE.exists():
        rows = [json.loads(line) for line in CAPTURE.read_text(encoding="utf-8").splitlines() if line.strip()]
        main = [r for r in rows if r["run"] == "main" and "x-claude-code-agent-id" not in r["headers"]]
        row = max(main, key=lambda r: len(r["body"]["messages"]))
        headers = {k: v for k, v in row["headers"].items() if k not in ("host", "content-length", "connection")}
        headers["x-api-key"] = "sk-ant-bench-dummy"
        return row["body"], headers
    print("note: ../shared/corpus is absent; using a synthetic Claude Code shaped body", file=sys.stderr)
    body = {"model": "claude-sonnet-4-6", "max_tokens": 32000, "stream": True,
            "system": [{"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.332"},
                       {"type": "text", "text": "You are Claude Code. " * 200, "cache_control": {"type": "ephemeral"}}],
            "tools": [{"name": f"Tool{i}", "description": "d " * 300, "input_schema": {"type": "object"}} for i in range(13)],
            "messages": [{"role": "user", "content": [{"type": "text", "text": "Fix the bug."}]}]}
    return body, {"content-type": "application/json", "anthropic-version": "2023-06-01", "x-api-key": "sk-ant-bench-dummy",
                  "user-agent": "claude-cli/2.1.332 (external, sdk-cli)"}


def _source_lines(n: int, seed: int) -> str:
    return "\n".join(f"{i + 1:>6}\u2192    value_{seed}_{i} = compute(value_{seed}_{i - 1}, {i}) # step {i}" for i in range(n))


def shaped_body(base: dict, target: int) -> bytes:
    """``base`` trimmed or grown to about ``target`` bytes, keeping Claude Code's shape."""
    body = copy.deepcopy(base)
    dumps = lambda b: json.dumps(b, separators=(",", ":"), ensure_ascii=False).encode()  # noqa: E731
    while len(dumps(body)) > target and body.get("tools"):
        body["tools"].pop()
    msgs = body["messages"]
    while len(dumps(body)) > target and len(msgs) > 1:
        del msgs[1:3]
    k = 0
    while len(dumps(body)) < target:
        missing = target - len(dumps(body))
        tid = f"toolu_bench{k:06d}"
        lines = max(1, min(400, missing // 80))
        msgs.append({"role": "assistant", "content": [
            {"type": "tool_use", "id": tid, "name": "Read", "input": {"file_path": f"/home/user/proj/src/mod{k}.py"}}]})
        msgs.append({"role": "user", "content": [
            {"tool_use_id": tid, "type": "tool_result", "content": _source_lines(lines, k)}]})
        k += 1
    if msgs[-1]["role"] != "user":
        msgs.append({"role": "user", "content": [{"type": "text", "text": "continue"}]})
    body["stream"] = True
    return dumps(body)


# -- the client -------------------------------------------------------------------------------

class Path_:
    def __init__(self, name: str, port: int, prefix: str = ""):
        self.name, self.port = name, port
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)

    def call(self, body: bytes, headers: dict) -> tuple[float, float]:
        """(total seconds, seconds to the first body byte)."""
        t0 = time.perf_counter()
        self.conn.request("POST", "/v1/messages?beta=true", body=body, headers=headers)
        resp = self.conn.getresponse()
        first = resp.read1(65536)
        ttfb = time.perf_counter() - t0
        rest = resp.read()
        total = time.perf_counter() - t0
        if resp.status != 200 or not (first + rest).endswith(b"message_stop\"}\n\n"):
            raise RuntimeError(f"{self.name}: HTTP {resp.status}")
        return total, ttfb


def _wait_port(port: int, timeout: float = 20.0) -> None:
    import socket

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listening on {port}")


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rss(pid: int) -> tuple[float, float]:
    vals = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(("VmRSS:", "VmHWM:")):
            key, num = line.split()[:2]
            vals[key] = int(num) / 1024
    return vals.get("VmRSS:", float("nan")), vals.get("VmHWM:", float("nan"))


def _start_scalpel(port: int, upstream: str, paused: bool, procs: list) -> subprocess.Popen:
    home = tempfile.mkdtemp(prefix="scalpel-bench-")
    env = dict(os.environ, SCALPEL_HOME=home, HOME=home)
    if paused:
        (Path(home) / "config").mkdir(parents=True)
        (Path(home) / "config" / "config.json").write_text(json.dumps({"paused": True}))
    p = subprocess.Popen([sys.executable, "-m", "scalpel_desktop", "start", "--quiet", "--port", str(port),
                          "--anthropic-upstream", upstream], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    procs.append(p)
    return p


def _cpu_ms(pid: int) -> float:
    """User + system CPU time of ``pid`` so far, in ms (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000.0 / os.sysconf("SC_CLK_TCK")


def settle(pids: list[int], quiet_ms: float = 20.0, limit_s: float = 2.0) -> None:
    """Wait until no server process uses CPU (background work of the previous call is done),
    so no path is measured while another one still works in the background."""
    deadline = time.monotonic() + limit_s
    last = [_cpu_ms(p) for p in pids]
    quiet_since = time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.005)
        now = [_cpu_ms(p) for p in pids]
        if now != last:
            last, quiet_since = now, time.monotonic()
        elif (time.monotonic() - quiet_since) * 1000 >= quiet_ms:
            return


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds-10k", type=int, default=400)
    ap.add_argument("--rounds-300k", type=int, default=150)
    ap.add_argument("--rounds-3m", type=int, default=60)
    ap.add_argument("--serve-upstream", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--serve-bare", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve_upstream:
        serve_upstream(args.serve_upstream)
        return 0
    if args.serve_bare:
        serve_bare(int(args.serve_bare[0]), args.serve_bare[1])
        return 0

    procs: list[subprocess.Popen] = []
    try:
        up_port, bare_port, sc_port, pa_port = (_free_port() for _ in range(4))
        upstream = f"http://127.0.0.1:{up_port}"
        procs.append(subprocess.Popen([sys.executable, __file__, "--serve-upstream", str(up_port)]))
        procs.append(subprocess.Popen([sys.executable, __file__, "--serve-bare", str(bare_port), upstream]))
        scalpel = _start_scalpel(sc_port, upstream, False, procs)
        _start_scalpel(pa_port, upstream, True, procs)
        for p in (up_port, bare_port, sc_port, pa_port):
            _wait_port(p)
        base, headers = _capture()
        paths = [Path_("direct", up_port), Path_("bare", bare_port), Path_("scalpel", sc_port), Path_("paused", pa_port)]
        pids = [p.pid for p in procs]
        pid_of = dict(zip(["direct", "bare", "scalpel", "paused"], pids))
        rounds = {"10 KB": args.rounds_10k, "300 KB": args.rounds_300k, "2.9 MB": args.rounds_3m}
        served = 0
        rows = []
        for label, size in SIZES:
            body = shaped_body(base, size)
            for p in paths:  # warm-up
                for _ in range(5):
                    p.call(body, headers)
            served += 5
            totals: dict[str, list[float]] = {p.name: [] for p in paths}
            ttfbs: dict[str, list[float]] = {p.name: [] for p in paths}
            cpu: dict[str, list[float]] = {p.name: [] for p in paths}
            for i in range(rounds[label]):
                order = paths[i % len(paths):] + paths[: i % len(paths)]  # rotate who goes first
                for p in order:
                    settle(pids)
                    c0 = _cpu_ms(pid_of[p.name])
                    total, ttfb = p.call(body, headers)
                    totals[p.name].append(total)
                    ttfbs[p.name].append(ttfb)
                    settle(pids)
                    cpu[p.name].append(_cpu_ms(pid_of[p.name]) - c0)
            served += rounds[label]
            for name in ("bare", "scalpel", "paused"):
                added = [(a - d) * 1000 for a, d in zip(totals[name], totals["direct"])]
                rows.append((label, len(body), name, statistics.median(added), pct(added, 0.95),
                             statistics.median(ttfbs[name]) * 1000, statistics.median(ttfbs["direct"]) * 1000,
                             statistics.mean(cpu[name]), len(added)))
        extra = max(0, 1000 - served)
        small = shaped_body(base, 10_000)
        for _ in range(extra):
            paths[2].call(small, headers)
        served += extra
        rss, hwm = _rss(scalpel.pid)

        print(f"# proxy overhead, {os.cpu_count()} CPUs, Python {sys.version.split()[0]}")
        print("| body | path | added latency median (ms) | added p95 (ms) | TTFB median (ms) | direct TTFB (ms) "
              "| CPU per request (ms) | rounds |")
        print("|---|---|---:|---:|---:|---:|---:|---:|")
        for label, nbytes, name, med, p95, ttfb, dttfb, cpu_ms, n in rows:
            print(f"| {label} ({nbytes:,} B) | {name} | {med:.2f} | {p95:.2f} | {ttfb:.2f} | {dttfb:.2f} | {cpu_ms:.1f} | {n} |")
        print()
        print(f"scalpel (default settings) after {served:,} requests: VmRSS {rss:.1f} MB, peak VmHWM {hwm:.1f} MB")
        for label, _, name, med, *_ in rows:
            if name == "paused":
                bare = next(r[3] for r in rows if r[0] == label and r[2] == "bare")
                print(f"{label}: pass-through minus bare forward = {med - bare:+.2f} ms (median)")
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
    return 0


if __name__ == "__main__":
    sys.exit(main())
