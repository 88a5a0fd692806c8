"""Time the bench over the corpus: every policy, the check and the ceiling.

    python benchmarks/bench_speed.py [DIR] [--tier 1|2]

Prints the wall time of reading and of the whole replay, and requests per
second (requests x arms). Target: the whole corpus, all policies (their
``hinted`` arms and the ceiling included), <= 2 s on 2 cores. The machine may
be shared: compare with another checkout's run in the same session.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", nargs="?", default=str(REPO.parent / "shared" / "corpus" / "transcripts"))
    ap.add_argument("--tier", type=int, choices=(1, 2), default=2)
    args = ap.parse_args()
    os.environ.setdefault("SCALPEL_HOME", tempfile.mkdtemp(prefix="scalpel-speed-"))
    from scalpel_desktop.accounting.prices import PriceTable
    from scalpel_desktop.bench.reader import read_corpus
    from scalpel_desktop.bench.replay import ALL_POLICIES, HINTED, STAGE_POLICIES, replay_corpus

    prices = PriceTable.builtin()
    t0 = time.perf_counter()
    files = read_corpus(Path(args.dir))
    t1 = time.perf_counter()
    res = replay_corpus(policies=ALL_POLICIES, tier=args.tier, prices=prices, files=files)
    t2 = time.perf_counter()
    reqs = sum(s.requests for s in res.sessions)
    hinted = [p + HINTED for p in STAGE_POLICIES]
    arms = len(ALL_POLICIES) + len(hinted) + 1  # + the hinted stage arms, the ceiling (the check is the off arm)
    print(f"corpus: {args.dir}")
    print(f"read:   {t1 - t0:.2f} s ({sum(f.lines for f in files)} lines)")
    print(f"replay: {t2 - t1:.2f} s for {len(res.sessions)} sequences, {reqs} requests, {arms} arms "
          f"({', '.join(ALL_POLICIES + tuple(hinted))}, ceiling), tier {args.tier}")
    print(f"total:  {t2 - t0:.2f} s; {reqs * arms / (t2 - t0):.0f} request-replays/s "
          f"({reqs / (t2 - t0):.0f} requests/s with every arm)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
