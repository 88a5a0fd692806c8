"""How much a cache keeper could save on a corpus, in hindsight and blind (issue 24 step 6).

The keeper (``proxy/keeper.py``) pings a conversation's cache before its TTL
lapses, so the request after a long pause reads instead of re-writing. This
script bounds what any keeper could do on a set of transcripts, billed from
the transcripts' own usage counts through the price table:

* ``hindsight``: a keeper that knows which pauses end in a return. Each
  ttl-expired miss (``bench/misses.py``) is avoided by ``floor(gap / step)``
  pings of the cached prefix (a read of it plus one output token), where
  ``step`` is the TTL less a 30 s margin; a pause that never returns costs
  nothing. No real keeper can beat this line.
* ``blind``: pinging every pause longer than a step until the return, with
  at most N pings per pause, N in 1, 2, 3, 5, 11; a session's end pays its N
  pings for nothing. ``--no-end`` prices the same keeper told of every end
  (SessionEnd reaching it before any ping): an upper line for the hook.

Main conversations only, unless ``--all`` (subagents' sequences too).
Figures are percentages of the corpus's real bill; positive means saved.

    python benchmarks/keeper_ceiling.py [CORPUS] [--all] [--no-end] [--json]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scalpel_desktop.accounting.misses import cached_after  # noqa: E402
from scalpel_desktop.accounting.prices import PriceTable  # noqa: E402
from scalpel_desktop.bench.misses import sequence_misses  # noqa: E402
from scalpel_desktop.bench.reader import read_corpus  # noqa: E402
from scalpel_desktop.wire.usage import Usage  # noqa: E402

MARGIN_S = 30.0
BOUNDS = (1, 2, 3, 5, 11)
DEFAULT_CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "transcripts"


def ceiling(corpus: Path, every_sequence: bool = False, told_of_ends: bool = False) -> dict:
    prices = PriceTable.load()
    real = hindsight = 0.0
    blind = {b: 0.0 for b in BOUNDS}
    pauses = returned = ends = 0
    for fr in read_corpus(str(corpus)):
        for seq in fr.sequences or []:
            reqs = seq.requests
            if len(reqs) < 2:
                continue
            real += sum(prices.rates(r.model).cost(r.usage) for r in reqs)
            if seq.kind != "main" and not every_sequence:
                continue
            misses = {m.request: m for m in sequence_misses(seq, prices, MARGIN_S) if m.cause == "ttl-expired"}
            last: dict[str, int] = {}
            for k, r in enumerate([*reqs, None]):
                model = r.model if r is not None else reqs[-1].model
                j = last.get(model) if r is not None else len(reqs) - 1
                if r is not None:
                    last[r.model] = k
                if j is None:
                    continue
                prev = reqs[j]
                step = (3600 if prev.usage.cache_write_1h else 300) - MARGIN_S
                gap = (r.ts - prev.ts) if r is not None else math.inf
                if gap <= step:
                    continue
                pauses += 1
                ends += gap == math.inf
                ping = prices.rates(model).cost(Usage(cache_read=cached_after(prev.usage), output_tokens=1))
                miss = misses.get(r.request_id) if r is not None else None
                if miss is not None:
                    returned += 1
                    hindsight += max(0.0, miss.cost_usd - max(1, math.floor(gap / step)) * ping)
                if gap == math.inf and told_of_ends:
                    continue
                for b in BOUNDS:
                    sent = b if gap == math.inf else min(b, math.floor(gap / step))
                    kept = miss is not None and gap <= (sent + 1) * step
                    blind[b] += (miss.cost_usd if kept else 0.0) - sent * ping
    pct = (lambda v: round(100 * v / real, 3)) if real else (lambda v: 0.0)
    return {"corpus": str(corpus), "sequences": "all" if every_sequence else "main",
            "told_of_ends": told_of_ends, "real_usd": round(real, 4),
            "pauses_over_a_step": pauses, "returned_as_ttl_misses": returned, "session_ends": ends,
            "hindsight_pct": pct(hindsight), "blind_pct": {str(b): pct(v) for b, v in blind.items()}}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("corpus", nargs="?", type=Path, default=DEFAULT_CORPUS, help="a folder of transcripts")
    ap.add_argument("--all", action="store_true", help="subagents' sequences too, not only main ones")
    ap.add_argument("--no-end", action="store_true", help="the keeper is told of every session's end")
    ap.add_argument("--json", action="store_true", help="one JSON object")
    args = ap.parse_args(argv)
    if not args.corpus.is_dir():
        print(f"keeper_ceiling: no such folder: {args.corpus} (give a folder of Claude Code transcripts)",
              file=sys.stderr)
        return 2
    out = ceiling(args.corpus, args.all, args.no_end)
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    print(f"corpus {out['corpus']} ({out['sequences']} sequences), real bill ${out['real_usd']:.2f}")
    print(f"pauses longer than a ping step: {out['pauses_over_a_step']} "
          f"({out['returned_as_ttl_misses']} return as ttl-expired misses, {out['session_ends']} session ends)")
    print(f"hindsight keeper (knows which pauses return): {out['hindsight_pct']:+.2f}% of the bill")
    ends = "told of every end" if args.no_end else "ends pay their pings"
    for b, v in out["blind_pct"].items():
        print(f"blind keeper, at most {b:>2} pings a pause ({ends}): {v:+.2f}%")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
