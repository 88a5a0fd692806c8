"""Issue 25 steps 1-2, "never wait": what a request waits for another conversation's, or its own, analysis.

Run: ``python benchmarks/never_wait.py [--others 1,10] [--size 3MB] [--rounds 3] [--concurrent 200]
[--only others,own,concurrent] [--set KEY=VALUE]``

The paths of ``proxy_overhead.py`` (``overhead/paths.py``): a bare aiohttp
forward and ``scalpel start`` (default settings, the pipeline that ships,
ledger included), each its own process, to the same upstream, measured in
the same run, round by round, with the same bodies. Bodies: the real Claude
Code 2.1.332 capture grown with ``--growth real`` (``overhead/bodies.py``:
3 MB is about 9,100 small messages).

1. others: a small conversation (about 50 KB) takes a turn alone; then
   ``N`` other conversations' first sightings of ``--size`` are sent at
   once, each on its own connection, and the moment all are answered (their
   analyses queued after the answers) the small conversation takes its next
   turn. Printed: the small turn alone and behind them, per path, and
   behind minus alone.
2. own: a conversation's first sighting of ``--size``, then its next turn
   sent the moment the answer is read; and another conversation's, its next
   turn sent ``--later`` s after. Printed: both, per path, and at once minus
   later.
3. concurrent: ``--concurrent`` first sightings of 100 KB sent at once, one
   connection each (as ``proxy_overhead.py --concurrent``): errors, p50, p99.

Medians over ``--rounds``; nothing is asserted (figures only).
"""

from __future__ import annotations

import argparse
import http.client
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from overhead.bodies import Conversation, first_sighting, load_capture  # noqa: E402
from overhead.load import concurrent  # noqa: E402
from overhead.paths import PathClient, settle, start_paths, stop_all  # noqa: E402
from overhead.table import pct  # noqa: E402
from overhead.upstreams import END, parse_or_serve  # noqa: E402

SMALL = 50_000


def parse_size(text: str) -> int:
    t = text.strip().upper().replace(" ", "")
    for unit, mult in (("MB", 1_000_000), ("KB", 1_000), ("B", 1)):
        if t.endswith(unit):
            return int(float(t[: -len(unit)]) * mult)
    return int(t)


def _post(port: int, body: bytes, headers: dict) -> float:
    """One call on a fresh connection: seconds to the last byte of the answer."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    try:
        t0 = time.perf_counter()
        conn.request("POST", "/v1/messages?beta=true", body=body, headers=headers)
        resp = conn.getresponse()
        data = resp.read()
        if resp.status != 200 or not data.endswith(END):
            raise RuntimeError(f"HTTP {resp.status}")
        return time.perf_counter() - t0
    finally:
        conn.close()


def others(paths: list[PathClient], n: int, size: int, rounds: int, capture, tags) -> dict[str, dict[str, list]]:
    """{path: {"alone": [s], "behind": [s]}}: the small conversation's turn alone and behind ``n`` first sightings."""
    base = Conversation(capture, size, next(tags))
    body0 = base.body()
    pids = [p.pid for p in paths]
    out: dict[str, dict[str, list]] = {p.name: {"alone": [], "behind": []} for p in paths}
    for p in paths:
        small = Conversation(capture, SMALL, next(tags))
        p.call(small.body(), small.headers)  # the small conversation is known
        for _ in range(rounds):
            settle(pids, limit_s=120)
            small.add_turn()
            out[p.name]["alone"].append(p.call(small.body(), small.headers))
            bodies = [first_sighting(body0, base, int(next(tags))) for _ in range(n)]
            small.add_turn()
            nxt = small.body()
            settle(pids, limit_s=120)
            with ThreadPoolExecutor(max_workers=n) as pool:
                list(pool.map(lambda bh: _post(p.port, *bh), bodies))
            out[p.name]["behind"].append(p.call(nxt, small.headers))  # the moment they are all answered
    settle(pids, limit_s=120)
    return out


def own(paths: list[PathClient], size: int, rounds: int, later_s: float, capture, tags) -> dict[str, dict[str, list]]:
    """{path: {"at once": [s], "later": [s]}}: a first sighting's next turn sent at once, or ``later_s`` after."""
    pids = [p.pid for p in paths]
    out: dict[str, dict[str, list]] = {p.name: {"at once": [], "later": []} for p in paths}
    for _ in range(rounds):
        for p in paths:
            for how in ("at once", "later"):
                c = Conversation(capture, size, next(tags))
                first = c.body()
                c.add_turn()
                nxt = c.body()
                settle(pids, limit_s=120)
                p.call(first, c.headers)
                if how == "later":
                    time.sleep(later_s)
                    settle(pids, limit_s=120)
                out[p.name][how].append(p.call(nxt, c.headers))
    settle(pids, limit_s=120)
    return out


def _ms(xs: list[float]) -> float:
    return statistics.median(xs) * 1000 if xs else float("nan")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--others", default="1,10", help="how many other conversations' first sightings (comma list)")
    ap.add_argument("--size", type=parse_size, default=3_000_000, help="their size (default 3MB)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--later", type=float, default=4.0, help="own: seconds before the later next turn")
    ap.add_argument("--concurrent", type=int, default=200, help="concurrent 100 KB first sightings")
    ap.add_argument("--only", default="others,own,concurrent", help="which parts (comma list)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a scalpel setting")
    args, rc = parse_or_serve(ap, argv)
    if args is None:
        return rc
    only = set(args.only.split(","))
    Conversation.growth = "real"
    capture = load_capture()
    tags = (f"{i:06d}" for i in range(1, 1_000_000))
    procs: list = []
    lines: list[str] = []
    t0 = time.monotonic()
    try:
        paths = start_paths(__file__, "nodelay", procs, dict(s.split("=", 1) for s in args.set))[1:]  # bare, scalpel
        nmsgs = len(Conversation(capture, args.size, "000000").doc["messages"])
        label = f"{args.size / 1e6:g} MB ({nmsgs:,} messages)"
        if "others" in only:
            lines += ["", f"A small conversation's turn (~{SMALL // 1000} KB) alone, and sent the moment N other "
                      f"conversations' first sightings of {label} are answered (ms, median of {args.rounds}):", "",
                      "| N | path | alone | behind | behind - alone |", "|---:|---|---:|---:|---:|"]
            for n in (int(x) for x in args.others.split(",")):
                print(f"[{time.monotonic() - t0:5.0f} s] others: {n}", file=sys.stderr)
                got = others(paths, n, args.size, args.rounds, capture, tags)
                for name, r in got.items():
                    a, b = _ms(r["alone"]), _ms(r["behind"])
                    lines.append(f"| {n} | {name} | {a:.1f} | {b:.1f} | {b - a:+.1f} |")
        if "own" in only:
            print(f"[{time.monotonic() - t0:5.0f} s] own", file=sys.stderr)
            got = own(paths, args.size, args.rounds, args.later, capture, tags)
            lines += ["", f"A conversation's next turn after its first sighting of {label}: sent the moment the "
                      f"answer is read, or {args.later:g} s later (ms, median of {args.rounds}):", "",
                      "| path | at once | later | at once - later |", "|---|---:|---:|---:|"]
            for name, r in got.items():
                a, b = _ms(r["at once"]), _ms(r["later"])
                lines.append(f"| {name} | {a:.1f} | {b:.1f} | {a - b:+.1f} |")
        if "concurrent" in only:
            print(f"[{time.monotonic() - t0:5.0f} s] concurrent: {args.concurrent}", file=sys.stderr)
            base = Conversation(capture, 100_000, next(tags))
            lines += ["", f"{args.concurrent} concurrent first sightings of 100 KB, one connection each (ms):", "",
                      "| path | errors | p50 | p99 |", "|---|---:|---:|---:|"]
            for p in paths:
                bodies = [first_sighting(base.body(), base, int(next(tags))) for _ in range(args.concurrent)]
                settle([q.pid for q in paths], limit_s=120)
                errors, lat = concurrent(p.port, bodies)
                lines.append(f"| {p.name} | {errors} | {statistics.median(lat) * 1000:.0f} | "
                             f"{pct(lat, 0.99) * 1000:.0f} |")
    finally:
        stop_all(procs)
    print(f"# never wait: {time.monotonic() - t0:.0f} s, command: python benchmarks/never_wait.py {' '.join(argv)}")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
