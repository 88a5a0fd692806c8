"""Time the bench over the corpus: every policy, the check and the ceiling.

    python benchmarks/bench_speed.py [DIR] [--tier 1|2] [--repeat N]

Prints the wall and CPU time of reading and of the whole replay, and requests
per second (requests x arms), side by side in one run:

* ``alone``: every arm does its own work (``replay_corpus(share=False)``: each
  stage arm lays out, shapes and validates every body itself, and a hinted arm
  the usage tells no break runs anyway): the baseline;
* ``shared``: each body's bytes, layout, request shape and rewritten bodies
  (their bytes, verdicts and stub offsets) found once for every arm, a hinted
  arm told no break taken for its plain arm, an arm whose cuts changed nothing
  yet taking the unmodified arm's bills (the default), in one process;
* ``shared, N jobs``: the same on ``--jobs`` forked processes (default: one per
  core, at most 4): what ``scalpel bench`` runs.

Both give the same figures (checked here, and in tests/bench/test_replay.py).
Best of ``--repeat`` runs each, alternated. Target (issue 12 part 6): the whole
corpus, all policies (their ``hinted`` arms and the ceiling included), <= 2 s of
the bench's own work in one process (the ``shared`` column's total).
The machine may be shared: compare the two columns, not runs of other days.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def _cpu() -> float:
    """CPU seconds of this process and of its reaped children (the replay's workers)."""
    import resource

    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + kids.ru_utime + kids.ru_stime


def timed(fn):
    w, c = time.perf_counter(), _cpu()
    out = fn()
    return out, time.perf_counter() - w, _cpu() - c


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", nargs="?", default=str(REPO.parent / "shared" / "corpus" / "transcripts"))
    ap.add_argument("--tier", type=int, choices=(1, 2), default=2)
    ap.add_argument("--repeat", type=int, default=3, help="runs of each arm of the comparison (best is shown)")
    ap.add_argument("--jobs", type=int, default=None, help="processes of the last column (default: one per core, <= 4)")
    args = ap.parse_args()
    os.environ.setdefault("SCALPEL_HOME", tempfile.mkdtemp(prefix="scalpel-speed-"))
    from scalpel_desktop.accounting.prices import PriceTable
    from scalpel_desktop.bench.reader import read_corpus
    from scalpel_desktop.bench.replay import ALL_POLICIES, HINTED, STAGE_POLICIES, replay_corpus

    prices = PriceTable.builtin()
    files, read_wall, read_cpu = timed(lambda: read_corpus(Path(args.dir)))
    from scalpel_desktop.bench.parallel import default_jobs

    jobs = args.jobs or default_jobs()
    modes = {"alone": (False, 1), "shared": (True, 1), f"shared, {jobs} jobs": (True, jobs)}
    best: dict[str, tuple[float, float]] = {}
    results = {}
    for _ in range(max(1, args.repeat)):
        for mode, (share, n) in modes.items():
            res, wall, cpu = timed(lambda: replay_corpus(policies=ALL_POLICIES, tier=args.tier, prices=prices,
                                                         files=files, share=share, jobs=n))
            results[mode] = [dataclasses.asdict(s) for s in res.sessions]
            w, c = best.get(mode, (wall, cpu))
            best[mode] = (min(w, wall), min(c, cpu))
    same = all(r == results["alone"] for r in results.values())
    reqs = sum(s["requests"] for s in results["shared"])
    hinted = [p + HINTED for p in STAGE_POLICIES]
    arms = len(ALL_POLICIES) + len(hinted) + 1  # + the hinted stage arms, the ceiling (the check is the off arm)
    print(f"corpus: {args.dir}")
    print(f"        {len(results['shared'])} sequences, {reqs} requests, {arms} arms "
          f"({', '.join(ALL_POLICIES + tuple(hinted))}, ceiling), tier {args.tier}; best of {args.repeat}")
    print(f"read:   {read_wall:.2f} s wall, {read_cpu:.2f} s CPU ({sum(f.lines for f in files)} lines)")
    width = 24
    print(" " * 8 + "".join(f"{m if m != 'alone' else 'alone (baseline)':>{width}}" for m in modes))
    for label, extra in (("replay:", (0.0, 0.0)), ("total:", (read_wall, read_cpu))):
        cells = [f"{best[m][0] + extra[0]:.2f} s, {best[m][1] + extra[1]:.2f} s CPU" for m in modes]
        print(f"{label:8}" + "".join(f"{c:>{width}}" for c in cells))
    rates = [f"{reqs * arms / (best[m][0] + read_wall):.0f} rq-arm/s" for m in modes]
    print(f"{'rate:':8}" + "".join(f"{r:>{width}}" for r in rates))
    base = best["alone"]
    print("speed-up over the baseline: " + ", ".join(
        f"{m}: {base[0] / best[m][0]:.2f}x wall, {base[1] / best[m][1]:.2f}x CPU" for m in list(modes)[1:])
        + f"; figures {'identical' if same else 'DIFFERENT'}")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
