"""Time the bench over the corpus: every policy, the check and the ceiling.

    python benchmarks/bench_speed.py [DIR] [--tier 1|2] [--repeat N]

Prints the wall and CPU time of reading and of the whole replay, and requests
per second (requests x arms), side by side in one run:

* ``alone``: every arm does its own work (``replay_corpus(share=False)``: each
  stage arm lays out, shapes and validates every body itself, and a hinted arm
  the usage tells no break runs anyway): the baseline;
* ``shared``: each body's layout, request shape and rewrite verdicts found once
  for every arm, a hinted arm told no break taken for its plain arm (the
  default, what ``scalpel bench`` runs).

Both give the same figures (checked here, and in tests/bench/test_replay.py).
Best of ``--repeat`` runs each, alternated. Target: the whole corpus, all
policies (their ``hinted`` arms and the ceiling included), <= 2 s on 2 cores.
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


def timed(fn):
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - w, time.process_time() - c


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", nargs="?", default=str(REPO.parent / "shared" / "corpus" / "transcripts"))
    ap.add_argument("--tier", type=int, choices=(1, 2), default=2)
    ap.add_argument("--repeat", type=int, default=3, help="runs of each arm of the comparison (best is shown)")
    args = ap.parse_args()
    os.environ.setdefault("SCALPEL_HOME", tempfile.mkdtemp(prefix="scalpel-speed-"))
    from scalpel_desktop.accounting.prices import PriceTable
    from scalpel_desktop.bench.reader import read_corpus
    from scalpel_desktop.bench.replay import ALL_POLICIES, HINTED, STAGE_POLICIES, replay_corpus

    prices = PriceTable.builtin()
    files, read_wall, read_cpu = timed(lambda: read_corpus(Path(args.dir)))
    best: dict[bool, tuple[float, float]] = {}
    results = {}
    for _ in range(max(1, args.repeat)):
        for share in (False, True):
            res, wall, cpu = timed(lambda: replay_corpus(policies=ALL_POLICIES, tier=args.tier, prices=prices,
                                                         files=files, share=share))
            results[share] = res
            w, c = best.get(share, (wall, cpu))
            best[share] = (min(w, wall), min(c, cpu))
    same = [dataclasses.asdict(s) for s in results[True].sessions] == \
        [dataclasses.asdict(s) for s in results[False].sessions]
    res = results[True]
    reqs = sum(s.requests for s in res.sessions)
    hinted = [p + HINTED for p in STAGE_POLICIES]
    arms = len(ALL_POLICIES) + len(hinted) + 1  # + the hinted stage arms, the ceiling (the check is the off arm)
    print(f"corpus: {args.dir}")
    print(f"        {len(res.sessions)} sequences, {reqs} requests, {arms} arms "
          f"({', '.join(ALL_POLICIES + tuple(hinted))}, ceiling), tier {args.tier}; best of {args.repeat}")
    print(f"read:   {read_wall:.2f} s wall, {read_cpu:.2f} s CPU ({sum(f.lines for f in files)} lines)")
    print(f"{'':8}{'alone (baseline)':>22}{'shared':>22}")
    for label, i in (("replay", None), ("total", "t")):
        cells = []
        for share in (False, True):
            w, c = best[share]
            if i:
                w, c = w + read_wall, c + read_cpu
            cells.append(f"{w:.2f} s / {c:.2f} s CPU")
        print(f"{label + ':':8}{cells[0]:>22}{cells[1]:>22}")
    tw = {share: best[share][0] + read_wall for share in best}
    print(f"{'rate:':8}{reqs * arms / tw[False]:>15.0f} rq-arm/s{reqs * arms / tw[True]:>15.0f} rq-arm/s")
    print(f"speed-up: {best[False][0] / best[True][0]:.2f}x wall, {best[False][1] / best[True][1]:.2f}x CPU; "
          f"figures {'identical' if same else 'DIFFERENT'}")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
