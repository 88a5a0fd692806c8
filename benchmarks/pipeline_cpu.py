"""CPU of the shipped stages on the request path and after the answer, in-process.

    python benchmarks/pipeline_cpu.py [--mode first|growing|evicted] [--growth reads|real|rereads] [--size 3]
                                      [--policy death] [--history N] [--rounds 20] [--profile]

The stages ``assemble.default_stages`` builds (parse-reuse, identify, calibrate,
tool inventory and filter, surgery; no ledger) on the bodies of
``benchmarks/proxy_overhead.py`` (the real Claude Code 2.1.332 capture grown to
``--size`` MB), one conversation warmed once, then ``--rounds`` first
sightings (a new session of the same size) or growing turns; ``evicted``: ten
conversations warmed once each, then their growing turns in turn (each a
known conversation the memo has dropped). Thread CPU time
(``time.thread_time``: steadier than wall time on a shared machine; the tools'
background writer and the pins worker are other threads, not counted) of
``process`` (the request path) and of ``complete`` (after the answer).
``--history N`` hands the economist ten past conversations of N requests (a
user's own ledger: a warm policy then may cut a first sighting at its worst
case). ``--profile`` prints cProfile's top functions.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from overhead.bodies import CAPTURE, Conversation, first_sighting, load_capture  # noqa: E402
from scalpel_desktop.accounting.prices import PriceTable  # noqa: E402
from scalpel_desktop.config import Config  # noqa: E402
from scalpel_desktop.exchange import ApiRequest, ResponseResult  # noqa: E402
from scalpel_desktop.pipeline import assemble  # noqa: E402
from scalpel_desktop.pipeline.chain import Chain  # noqa: E402
from scalpel_desktop.surgery.remaining import History  # noqa: E402
from scalpel_desktop.wire.usage import Usage  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--growth", choices=("reads", "real", "rereads"), default="reads")
    ap.add_argument("--size", type=float, default=3.0, help="MB")
    ap.add_argument("--mode", choices=("first", "growing", "evicted"), default="first")
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--policy", default="", help="surgery policy (default: the shipped default)")
    ap.add_argument("--history", type=int, default=0, metavar="N")
    ap.add_argument("--profile", action="store_true")
    a = ap.parse_args(argv)
    if not CAPTURE.exists():
        print(f"needs the real Claude Code 2.1.332 capture at {CAPTURE} (../shared/corpus)", file=sys.stderr)
        return 2
    os.environ.setdefault("SCALPEL_HOME", tempfile.mkdtemp(prefix="scalpel-home-"))
    Conversation.growth = a.growth
    tmp = Path(tempfile.mkdtemp(prefix="scalpel-bench-cpu-"))
    cfg = Config(path=tmp / "config.json")
    if a.policy:
        cfg.set("policy", a.policy)
    stages = assemble.default_stages(cfg, db_path=tmp / "l.db", spill_dir=tmp / "spill", prices=PriceTable.builtin())
    chain = Chain(stages)
    if a.history:
        chain.get("surgery").economist.history = History.of([a.history] * 10)
    conv = Conversation(load_capture(), int(a.size * 1e6), "000001")
    t = 1_000_000.0

    def send(body: bytes, headers: dict, at: float) -> tuple[object, float, float]:
        h = {k.lower(): v for k, v in headers.items()}
        c0 = time.thread_time()
        ex = chain.process(ApiRequest("POST", "/v1/messages", "beta=true", "anthropic", "messages", h, body, at))
        path = (time.thread_time() - c0) * 1000
        c1 = time.thread_time()
        chain.complete(ex, ResponseResult(200, Usage(cache_read=1000, input_tokens=10), 1, 1, at + 2))
        return ex, path, (time.thread_time() - c1) * 1000

    convs = [conv] + [Conversation(load_capture(), int(a.size * 1e6), f"{k + 2:06d}")
                      for k in range(9 if a.mode == "evicted" else 0)]
    for c in convs:
        send(c.body(), c.headers, t)
    prof = cProfile.Profile() if a.profile else None
    paths, afters = [], []
    ex = None
    for i in range(a.rounds):
        t += 20
        if a.mode == "first":
            body, headers = first_sighting(conv.body(), conv, i + 2)
        else:
            c = convs[i % len(convs)]
            c.add_turn()
            body, headers = c.body(), c.headers
        if prof:
            prof.enable()
        ex, path, after = send(body, headers, t)
        if prof:
            prof.disable()
        paths.append(path)
        afters.append(after)
    print(f"{a.mode} {a.growth} {a.size:g} MB ({len(conv.doc['messages'])} messages), policy "
          f"{cfg.get('policy')}: request path CPU median {statistics.median(paths):.2f} ms (min {min(paths):.2f}), "
          f"after the answer {statistics.median(afters):.2f} ms; last decision {ex.decision.label}: "
          f"{ex.decision.reason[:100]}")
    if prof:
        pstats.Stats(prof).sort_stats("cumulative").print_stats(40)
    assemble.close_stages(stages)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
