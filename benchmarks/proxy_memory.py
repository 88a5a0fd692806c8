"""The proxy's resident memory over the wire, side by side with a bare aiohttp forward.

    python benchmarks/proxy_memory.py [--requests 1000] [--conversations 10] [--concurrent 50]
                                      [--size 2600000] [--growth reads|real] [--json] [--out FILE]

Three processes, as ``benchmarks/proxy_overhead.py`` starts them: a minimal
upstream (a raw asyncio server that reads the body and answers an
Anthropic-shaped SSE stream with TCP_NODELAY, one send), a bare aiohttp
forward (read, forward, stream back: the baseline), and ``scalpel start`` as
shipped (default settings and policy, the ledger included, its own temporary
SCALPEL_HOME). Each path gets its own keep-alive connection.

Phase 1, steady: ``--conversations`` real Claude Code 2.1.332 conversations
of about ``--size`` bytes (``proxy_overhead``'s body builders: the capture's
longest main-thread request grown; ``real``, the default: with the capture's
own tool results again, ~7,900 messages, so each stays about 2.6 MB; ``reads``:
with 30 KB Read results, ~220 messages, each growing by 30 KB a turn), one
turn each in turn, each request sent to both paths (who goes first alternates).
VmRSS of both server processes (``/proc/PID/status``) at request 0, 100, ..., and 1 and 5 s
after the last, idle (the work after an answer may still run when it is read).

Phase 2, burst: ``--concurrent`` first sightings of 1-3 MB at once, one
connection each, to each path in turn: VmRSS before, the peak (sampled every
10 ms) and 1, 2, 5 and 10 s after the last answer.

``SCALPEL_MEMTRACE=DIR`` in the environment passes through to the proxy
(``proxy/memtrace.py``): the benchmark then asks for a tracemalloc snapshot
at the 500th and last request and after the burst, written to DIR. Nothing
is asserted; figures are noisy on a shared machine: compare the two columns.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from overhead.bodies import (  # noqa: E402 - proxy_overhead's body builders, not a copy
    Conversation, first_sighting, load_capture)

STEPS = 100
AFTER_S = (1, 2, 5, 10)
STEADY_AFTER_S = (1, 5)  # after the last steady request, idle


# -- the upstream and the bare forward are proxy_overhead's (`python proxy_memory.py --serve-... PORT ...`)

from overhead.paths import free_port, stop_all, wait_port  # noqa: E402
from overhead.upstreams import END, parse_or_serve  # noqa: E402


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    return float("nan")


class Server:
    def __init__(self, name: str, port: int, proc: subprocess.Popen):
        self.name, self.port, self.proc = name, port, proc
        import http.client
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def call(self, body: bytes, headers: dict) -> float:
        t0 = time.perf_counter()
        self.conn.request("POST", "/v1/messages?beta=true", body=body, headers=headers)
        resp = self.conn.getresponse()
        data = resp.read()
        if resp.status != 200 or not data.endswith(END):
            raise RuntimeError(f"{self.name}: HTTP {resp.status}")
        return time.perf_counter() - t0


def start(procs: list, memtrace: str | None) -> tuple[Server, Server]:
    up, bare, sc = free_port(), free_port(), free_port()
    upstream = f"http://127.0.0.1:{up}"
    home = tempfile.mkdtemp(prefix="scalpel-mem-")
    env = {k: v for k, v in os.environ.items() if k != "SCALPEL_MEMTRACE"}
    env.update(HOME=home, SCALPEL_HOME=home, CLAUDE_CONFIG_DIR=f"{home}/.claude", XDG_CONFIG_HOME=f"{home}/.config",
               XDG_DATA_HOME=f"{home}/.local/share", XDG_STATE_HOME=f"{home}/.local/state",
               XDG_CACHE_HOME=f"{home}/.cache")
    sc_env = dict(env, **({"SCALPEL_MEMTRACE": memtrace} if memtrace else {}))
    me = [sys.executable, __file__]
    started = [
        subprocess.Popen(me + ["--serve-upstream", str(up), "nodelay"], env=env),
        subprocess.Popen(me + ["--serve-bare", str(bare), upstream], env=env),
        subprocess.Popen([sys.executable, "-m", "scalpel_desktop", "start", "--quiet", "--port", str(sc),
                          "--anthropic-upstream", upstream], env=sc_env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL),
    ]
    procs.extend(started)
    for port in (up, bare, sc):
        wait_port(port)
    return Server("bare", bare, started[1]), Server("scalpel", sc, started[2])


def memtrace_dump(memtrace: str | None, label: str) -> None:
    """Ask the proxy for a tracemalloc snapshot (``proxy/memtrace.py``) and wait for it."""
    if not memtrace:
        return
    want = Path(memtrace) / f"{label}.txt"
    (Path(memtrace) / "dump").write_text(label)
    deadline = time.monotonic() + 120
    while not want.exists() and time.monotonic() < deadline:
        time.sleep(0.1)


# -- the phases ------------------------------------------------------------------------------------

def steady(paths: tuple[Server, Server], args, capture, tags, memtrace) -> tuple[list[dict], dict]:
    """(VmRSS rows every STEPS requests, the median time of a request per path in ms)."""
    Conversation.growth = args.growth
    convs = [Conversation(capture, args.size, next(tags)) for _ in range(args.conversations)]
    rows = [{"request": 0, **{p.name: rss_mb(p.pid) for p in paths}}]
    t0 = time.monotonic()
    took: dict[str, list[float]] = {p.name: [] for p in paths}
    for i in range(args.requests):
        c = convs[i % len(convs)]
        c.add_turn()
        body = c.body()
        for p in paths[i % 2:] + paths[:i % 2]:  # who goes first alternates
            took[p.name].append(p.call(body, c.headers))
        n = i + 1
        if n % STEPS == 0 or n == args.requests:
            rows.append({"request": n, **{p.name: rss_mb(p.pid) for p in paths}})
            print(f"  [{time.monotonic() - t0:5.0f} s] {n} requests: "
                  + ", ".join(f"{p.name} {rows[-1][p.name]:.0f} MB" for p in paths), file=sys.stderr)
        if n == args.requests // 2 or n == args.requests:
            memtrace_dump(memtrace, f"request-{n}")
    # The samples above are taken the moment an answer is read: the work after that answer (a
    # first sighting's or a dropped conversation's analysis) may still be running. Once idle:
    t_end = time.monotonic()
    for s in STEADY_AFTER_S:
        time.sleep(max(0.0, t_end + s - time.monotonic()))
        rows.append({"request": f"+{s} s", **{p.name: rss_mb(p.pid) for p in paths}})
    return rows, {k: round(statistics.median(v) * 1000, 1) for k, v in took.items() if v}


async def _burst(port: int, bodies: list[tuple[bytes, dict]]) -> int:
    import aiohttp

    async def one(session, body, headers) -> bool:
        try:
            async with session.post(f"http://127.0.0.1:{port}/v1/messages?beta=true", data=body, headers=headers) as r:
                return r.status == 200 and (await r.read()).endswith(END)
        except (aiohttp.ClientError, asyncio.TimeoutError, OSError):
            return False

    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0, force_close=True),
                                     timeout=aiohttp.ClientTimeout(total=300), auto_decompress=False) as s:
        got = await asyncio.gather(*(one(s, b, h) for b, h in bodies))
    return sum(1 for g in got if not g)


def burst(p: Server, n: int, capture, tags) -> dict:
    """``n`` first sightings of 1-3 MB at once: RSS before, peak, and after."""
    rng = random.Random(12)
    Conversation.growth = "reads"  # quick to build; each body a conversation never seen
    bases = [Conversation(capture, 1_000_000 + 250_000 * k, next(tags)) for k in range(9)]  # 1-3 MB
    bodies = [first_sighting(base.body(), base, int(next(tags)))
              for base in (bases[rng.randrange(len(bases))] for _ in range(n))]
    sizes = sorted(len(b) for b, _ in bodies)
    time.sleep(1.0)
    out = {"before": rss_mb(p.pid), "bodies": n, "min_mb": round(sizes[0] / 1e6, 2),
           "max_mb": round(sizes[-1] / 1e6, 2)}
    peak, done = [out["before"]], threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], rss_mb(p.pid))
            time.sleep(0.01)

    th = threading.Thread(target=sample, daemon=True)
    th.start()
    out["errors"] = asyncio.run(_burst(p.port, bodies))
    t_end = time.monotonic()
    done.set()
    th.join()
    out["peak"] = max(peak[0], rss_mb(p.pid))
    for s in AFTER_S:
        time.sleep(max(0.0, t_end + s - time.monotonic()))
        out[f"after_{s}s"] = rss_mb(p.pid)
    return out


def markdown(res: dict) -> str:
    a = res["args"]
    lines = [f"Command: `{res['command']}` ({os.cpu_count()} CPUs, Python {sys.version.split()[0]}, "
             f"{res['seconds']:.0f} s)", "",
             f"Steady: {a['requests']:,} requests over {a['conversations']} conversations of about "
             f"{a['size'] / 1e6:.1f} MB (growth: {a['growth']}), one turn each in turn, keep-alive; VmRSS (MB):", "",
             "| request | bare forward | scalpel |", "|---:|---:|---:|"]
    lines += [f"| {r['request'] if isinstance(r['request'], str) else format(r['request'], ',')} | {r['bare']:.0f} "
              f"| {r['scalpel']:.0f} |" for r in res["steady"]]
    if res.get("median_ms"):
        lines += ["", "Median request over the wire (ms, client side, upstream included): "
                  + ", ".join(f"{k} {v:.1f}" for k, v in res["median_ms"].items()) + "."]
    b = res["burst"]
    lines += ["", f"Burst: {b['scalpel']['bodies']} first sightings of {b['scalpel']['min_mb']}-"
              f"{b['scalpel']['max_mb']} MB at once, one connection each; VmRSS (MB):", "",
              "| path | before | peak | " + " | ".join(f"+{s} s" for s in AFTER_S) + " | errors |",
              "|---|---:|---:|" + "---:|" * len(AFTER_S) + "---:|"]
    for name in ("bare", "scalpel"):
        r = b[name]
        lines.append(f"| {name} | {r['before']:.0f} | {r['peak']:.0f} | "
                     + " | ".join(f"{r[f'after_{s}s']:.0f}" for s in AFTER_S) + f" | {r['errors']} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=1000, help="steady requests in all (default 1000)")
    ap.add_argument("--conversations", type=int, default=10, help="conversations, round robin (default 10)")
    ap.add_argument("--size", type=int, default=2_600_000, help="each conversation's starting size in bytes")
    ap.add_argument("--growth", choices=("reads", "real"), default="real",
                    help="real (default): the capture's own tool results again (~7,900 messages at 2.6 MB, "
                         "+0.2 MB over 1,000 requests); reads: 30 KB Read results (~220 messages; each "
                         "conversation grows by 3 MB over 1,000 requests)")
    ap.add_argument("--concurrent", type=int, default=50, help="bodies of 1-3 MB in the burst (0: no burst)")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    ap.add_argument("--out", help="also write the markdown table to this file")
    args, rc = parse_or_serve(ap)
    if args is None:
        return rc
    if args.requests < 0 or args.conversations < 1 or args.concurrent < 0 or args.size < 1:
        ap.error("--requests, --concurrent >= 0; --conversations, --size >= 1")
    memtrace = os.environ.get("SCALPEL_MEMTRACE")
    if memtrace:
        Path(memtrace).mkdir(parents=True, exist_ok=True)
    capture = load_capture()
    tags = (f"{i:06d}" for i in range(1, 1_000_000))
    t0 = time.monotonic()
    procs: list[subprocess.Popen] = []
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stopped: the servers are stopped too (finally)
    res: dict = {"args": {k: getattr(args, k) for k in ("requests", "conversations", "size", "growth", "concurrent")}}
    try:
        paths = start(procs, memtrace)
        print(f"steady: {args.requests} requests", file=sys.stderr)
        res["steady"], res["median_ms"] = steady(paths, args, capture, tags, memtrace)
        res["burst"] = {}
        if args.concurrent:
            for p in paths:
                print(f"burst: {args.concurrent} bodies to {p.name}", file=sys.stderr)
                res["burst"][p.name] = burst(p, args.concurrent, capture, tags)
            memtrace_dump(memtrace, "burst")
    finally:
        stop_all(procs)
    res["seconds"] = time.monotonic() - t0
    res["command"] = "python benchmarks/proxy_memory.py " + " ".join(sys.argv[1:])
    if args.json:
        print(json.dumps(res, indent=2))
    elif res["burst"]:
        print(markdown(res))
    else:
        print(json.dumps({"steady": res["steady"], "median_ms": res["median_ms"]}))
    if args.out:
        Path(args.out).write_text(markdown(res) if res["burst"] else json.dumps(res, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
