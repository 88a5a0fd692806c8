"""What the shipped stages hold while the tools' background writer lags behind, in process.

Run: ``python benchmarks/writer_backlog.py [--conversations 10] [--size 2.6] [--rounds 3]``

The tool inventory hands its database writes to one background thread
(``tools/writer.py``). When that thread lags - first sightings back to back,
a slow or locked disk - its queue grows, and whatever a queued job refers to
stays alive. This runs the stages ``assemble.default_stages`` builds (no
ledger) in one thread, as fast as it can, over ``--conversations`` first
sightings of the real Claude Code 2.1.332 capture grown to ``--size`` MB
(``proxy_overhead``'s builders, ``--growth real``) and then ``--rounds``
turns of each, and prints after each step what tracemalloc counts allocated
by scalpel's own code and still alive (the bodies the benchmark builds are
not counted), the writer's queue, and at the end how long the writer took to
drain. Nothing is asserted; run it in two trees to compare.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from overhead.bodies import CAPTURE, Conversation, load_capture  # noqa: E402
from scalpel_desktop.accounting.prices import PriceTable  # noqa: E402
from scalpel_desktop.config import Config  # noqa: E402
from scalpel_desktop.exchange import ApiRequest, ResponseResult  # noqa: E402
from scalpel_desktop.pipeline import assemble  # noqa: E402
from scalpel_desktop.pipeline.chain import Chain  # noqa: E402
from scalpel_desktop.wire.usage import Usage  # noqa: E402


def held_mb() -> float:
    """MB allocated by scalpel_desktop's own code and still alive."""
    gc.collect()
    stats = tracemalloc.take_snapshot().statistics("filename")
    return sum(s.size for s in stats if "scalpel_desktop" in s.traceback[0].filename) / 1e6


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--conversations", type=int, default=10)
    ap.add_argument("--size", type=float, default=2.6, help="MB")
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args(argv)
    if not CAPTURE.exists():
        print(f"needs the real Claude Code 2.1.332 capture at {CAPTURE} (../shared/corpus)", file=sys.stderr)
        return 2
    os.environ.setdefault("SCALPEL_HOME", tempfile.mkdtemp(prefix="scalpel-home-"))
    Conversation.growth = "real"
    tmp = Path(tempfile.mkdtemp(prefix="scalpel-backlog-"))
    stages = assemble.default_stages(Config(path=tmp / "config.json"), db_path=tmp / "l.db",
                                     spill_dir=tmp / "spill", prices=PriceTable.builtin())
    chain = Chain(stages)
    writer = chain.get("inventory").writer
    capture = load_capture()
    convs = [Conversation(capture, int(a.size * 1e6), f"{k + 1:06d}") for k in range(a.conversations)]
    tracemalloc.start(1)
    at = 1_000_000.0

    def send(c: Conversation) -> None:
        headers = {k.lower(): v for k, v in c.headers.items()}
        ex = chain.process(ApiRequest("POST", "/v1/messages", "beta=true", "anthropic", "messages", headers,
                                      c.body(), at))
        chain.complete(ex, ResponseResult(200, Usage(cache_read=1000, input_tokens=10), 1, 1, at + 2))

    print(f"{a.conversations} conversations of {a.size:g} MB; held = MB allocated by scalpel and alive")
    print()
    print("| step | held, MB | writer queue |")
    print("|---|---:|---:|")
    for i, c in enumerate(convs):
        send(c)
        print(f"| first sighting {i + 1} | {held_mb():.1f} | {writer._q.qsize()} |")
    for r in range(a.rounds):
        for c in convs:
            at += 20
            c.add_turn()
            send(c)
        print(f"| round {r + 1} | {held_mb():.1f} | {writer._q.qsize()} |")
    t0 = time.monotonic()
    writer.flush(120)
    print(f"| writer drained ({time.monotonic() - t0:.2f} s) | {held_mb():.1f} | {writer._q.qsize()} |")
    assemble.close_stages(stages)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
