"""What the proxy adds, side by side in one run: scalpel, a bare aiohttp forward, direct calls.

    python benchmarks/proxy_overhead.py [--quick] [--out FILE.md]
    python benchmarks/proxy_overhead.py --mode "first sighting" --size 3MB --rounds 30   # one cell

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

Bodies (``overhead/bodies.py``): the longest main-thread request of the real
Claude Code 2.1.332 capture in ../shared/corpus/wire, grown to 100 KB, 1 MB,
3 MB and 10 MB by appending the capture's own tool_use / tool_result pairs
again, with fresh tool ids (many small messages: per-message work shows);
``--growth reads`` grows them with Read calls of 30 KB synthetic files instead,
``--growth rereads`` with the same Reads of 60 files in turn (each later turn
re-reads one: the ghost of a dropped conversation follows the death).
Modes (``overhead/modes.py``): growing, retry, first sighting, evicted (ten
conversations in turn: each request a known conversation's next turn after
the memo dropped it), back to back, and first sighting back to back. "Added latency" is the time from the
client's send to the last byte of the answer it reads, minus the direct call
of the same round; work a path does after the answer counts only where it
delays a later request (the back to back modes send the next one at once;
the others wait until the proxy is idle, as a real client's next request
comes seconds later).

Figures: p50 and p95 added latency over direct, scalpel's p50 over bare (paired
per round), CPU time of the path's own server process per request; scalpel's
RSS after 1,000 requests over 10 conversations of about 2.6 MB; 200 concurrent
streams per path (100 KB first sightings): errors and p99. Nothing is asserted.

``--mode``, ``--size``, ``--upstream`` (each repeatable) run only those cells,
without the RSS and concurrency parts unless ``--rss`` / ``--concurrent`` ask
for them; ``--rounds`` sets every cell's rounds; ``--set KEY=VALUE`` configures
scalpel (``scalpel config set``) before it starts; ``--history N`` seeds its
ledger with N past conversations (a user's own history: the warm policies
then have turns to earn on; a first sighting still goes out as it came, as
on a fresh install, since a conversation never seen is never cut on a guess).
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from overhead.bodies import Conversation, first_sighting, load_capture  # noqa: E402
from overhead.load import concurrent, memory  # noqa: E402
from overhead.modes import MODES, measure  # noqa: E402
from overhead.paths import settle, start_paths, stop_all  # noqa: E402
from overhead.table import HEADER, pct, size_label, table_rows  # noqa: E402
from overhead.upstreams import parse_or_serve  # noqa: E402

SIZES = {"100 KB": 100_000, "1 MB": 1_000_000, "3 MB": 3_000_000, "10 MB": 10_000_000}
FULL_ROUNDS = {"100 KB": 30, "1 MB": 20, "3 MB": 12, "10 MB": 6}
QUICK_ROUNDS = {"100 KB": 8, "1 MB": 6, "3 MB": 4, "10 MB": 2}
NAGLE_MODES = ("growing", "back to back")  # the stall needs a reply within the ACK delay: back to back


def parse_size(text: str) -> int:
    """"3MB", "2.9 MB", "100KB", "250000" -> bytes."""
    t = text.strip().upper().replace(" ", "")
    for unit, mult in (("MB", 1_000_000), ("KB", 1_000), ("B", 1)):
        if t.endswith(unit):
            return int(float(t[: -len(unit)]) * mult)
    return int(float(t))


def parse_mode(text: str) -> str:
    m = text.strip().lower().replace("-", " ").replace("_", " ")
    m = m.replace("first sighting back", "first sighting, back")
    if m not in MODES:
        raise argparse.ArgumentTypeError(f"unknown mode {text!r}; one of: {', '.join(MODES)}")
    return m


def cells(args) -> list[tuple[str, str, str, int, int]]:
    """(upstream, mode, size label, bytes, rounds) of every cell to run."""
    rounds = QUICK_ROUNDS if args.quick else FULL_ROUNDS
    picked = args.mode or args.size or args.upstream
    sizes = [(size_label(s), s) for s in args.size] if args.size else list(SIZES.items())

    def r(label: str, size: int) -> int:
        if args.rounds:
            return args.rounds
        return rounds.get(label) or (30 if size < 1_000_000 else 20 if size < 3_000_000 else 12 if size < 10_000_000
                                     else 6)

    if picked:
        modes = args.mode or list(MODES)
        return [(up, m, label, size, r(label, size)) for up in (args.upstream or ["nodelay"])
                for m in modes for label, size in sizes]
    out = [("nodelay", m, label, size, r(label, size)) for m in MODES for label, size in sizes]
    for m in NAGLE_MODES:
        for label in (["1 MB"] if args.quick else ["100 KB", "1 MB"]):
            out.append(("nagle", m, label, SIZES[label], r(label, SIZES[label])))
    return out


def profile(pid: int, out: str) -> subprocess.Popen:
    """py-spy sampling ``pid`` (every thread, only while it holds the GIL) into ``out``."""
    spy = subprocess.Popen(["py-spy", "record", "--pid", str(pid), "--format", "raw", "--rate", "500", "--gil",
                            "--threads", "--output", out], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.0)
    return spy


def command_line(argv: list[str]) -> str:
    parts = ["python benchmarks/proxy_overhead.py"]
    skip = False
    for a in argv:
        if skip or a.startswith("--out"):
            skip = a == "--out"
            continue
        parts.append(f'"{a}"' if " " in a else a)
    return " ".join(parts)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="a short run: fewer rounds, 200 requests for the RSS figure")
    ap.add_argument("--out", help="also write the markdown to this file")
    ap.add_argument("--growth", choices=("real", "reads", "rereads"), default="real",
                    help="real: the capture's own tool_use/tool_result pairs again (default); reads: Read calls "
                         "of 400-line synthetic files (~30 KB each, far fewer messages), as the earlier benchmark; "
                         "rereads: the same Reads of 60 files in turn, each later turn re-reading one")
    ap.add_argument("--mode", action="append", type=parse_mode, help=f"run only this mode (repeatable): {', '.join(MODES)}")
    ap.add_argument("--size", action="append", type=parse_size, help="run only this body size (repeatable): 100KB, 3MB, 2.9MB")
    ap.add_argument("--upstream", action="append", choices=("nodelay", "nagle"), help="run only this upstream (repeatable)")
    ap.add_argument("--rounds", type=int, help="rounds of every cell (default: by size, fewer with --quick)")
    ap.add_argument("--rss", action="store_true", help="with --mode/--size/--upstream: the RSS part too")
    ap.add_argument("--concurrent", action="store_true", help="with --mode/--size/--upstream: 200 concurrent streams too")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a scalpel setting (repeatable)")
    ap.add_argument("--history", type=int, default=0, metavar="N",
                    help="seed scalpel's ledger with N past conversations of 100 requests (a user's own history: "
                         "the warm policies then have turns to earn on)")
    ap.add_argument("--py-spy", metavar="FILE", help="sample scalpel with py-spy during the cells (raw "
                    "collapsed stacks, GIL holders only) into FILE")
    args, rc = parse_or_serve(ap, argv)
    if args is None:
        return rc
    settings = dict(s.split("=", 1) for s in args.set)
    picked = bool(args.mode or args.size or args.upstream)
    do_rss, do_conc = (args.rss, args.concurrent) if picked else (True, True)

    Conversation.growth = args.growth
    capture = load_capture()
    tags = (f"{i:06d}" for i in range(1, 1_000_000))
    t_start = time.monotonic()
    load0 = os.getloadavg()
    procs: list = []
    out: list[str] = []
    try:
        started = {}
        rows = []
        for up, mode, label, size, rounds in cells(args):
            if up not in started:
                started[up] = start_paths(__file__, up, procs, settings, args.history)
                if args.py_spy:
                    spy = profile(started[up][2].pid, args.py_spy + ("" if up == "nodelay" else "." + up))
            print(f"[{time.monotonic() - t_start:5.0f} s] {up} / {mode} / {label} / {rounds} rounds", file=sys.stderr)
            totals, cpu, nmsgs = measure(started[up], mode, size, rounds, capture, tags)
            rows += table_rows("nagle (2 sends)" if up == "nagle" else up, mode, label, nmsgs, totals, cpu)
        if args.py_spy:
            spy.send_signal(signal.SIGINT)
            spy.wait(30)
        fast = started.get("nodelay") or (start_paths(__file__, "nodelay", procs, settings, args.history)
                                          if do_rss or do_conc else None)
        n_mem = 200 if args.quick else 1000
        if do_rss:
            print(f"[{time.monotonic() - t_start:5.0f} s] memory: {n_mem} requests", file=sys.stderr)
            before, half, after = memory(fast[2], capture, n_mem, tags)
        conc = []
        if do_conc:
            print(f"[{time.monotonic() - t_start:5.0f} s] 200 concurrent streams", file=sys.stderr)
            base = Conversation(capture, 100_000, next(tags))
            for p in fast:
                bodies = [first_sighting(base.body(), base, int(next(tags))) for _ in range(200)]
                settle([q.pid for q in fast])
                errors, lat = concurrent(p.port, bodies)
                conc.append((p.name, errors, pct(lat, 0.99) * 1000 if lat else float("nan"),
                             statistics.median(lat) * 1000 if lat else float("nan")))
        load1 = os.getloadavg()
        out.append(f"# proxy overhead ({'quick' if args.quick else 'partial' if picked else 'full'} run), "
                   f"{os.cpu_count()} CPUs, Python {sys.version.split()[0]}, {time.monotonic() - t_start:.0f} s, "
                   f"load average {load0[0]:.1f} at the start, {load1[0]:.1f} at the end")
        out.append("")
        out.append(f"Command: `{command_line(argv)}`. Added latency = the path's call (send to the last byte of "
                   "the answer read) minus the direct call of the same round (ms); the direct rows give the "
                   "direct call's own time. `vs bare` = scalpel minus bare, paired per round. CPU = the path's "
                   "server process, ms per request: until the answer was read (the request path), and in all "
                   "(the work after the answer included; back to back: the whole cell's over its rounds). "
                   "/proc counts CPU in 10 ms ticks: these are means over the rounds.")
        out.append("")
        out += HEADER
        out += rows
        if do_rss:
            out.append("")
            out.append(f"scalpel RSS over {n_mem:,} requests (10 conversations of about 2.6 MB grown with 30 KB Read "
                       "results, ~90 messages each, one turn each in turn, "
                       f"back to back, after the runs above): {before:.0f} MB before, {half:.0f} MB after "
                       f"{n_mem // 2:,}, {after:.0f} MB after {n_mem:,}.")
        if do_conc:
            out.append("")
            out.append("200 concurrent streams (100 KB first sightings, one connection each, nodelay upstream):")
            out.append("")
            out.append("| path | errors | p50 (ms) | p99 (ms) |")
            out.append("|---|---:|---:|---:|")
            out += [f"| {name} | {errors} | {p50:.0f} | {p99:.0f} |" for name, errors, p99, p50 in conc]
    finally:
        stop_all(procs)
    text = "\n".join(out) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
