"""What the pipeline keeps per conversation, with several large conversations at once.

Run: ``python benchmarks/pipeline_memory.py [--conversations 8] [--size 2900000] [--rounds 6]
[--parse-reuse-mb N] [--memo-mb N]``

``--requests 1000 --conversations 10 --size 2600000``: that many requests,
round robin over the conversations, through the shipped stages
(``assemble.default_stages``, budgets from the settings' defaults unless
given); VmRSS is printed every 100 requests (flat between the 500th and the
1,000th is the target) and at the end. ``--burst 50``: then that many bodies
of 1-3 MB at once on the proxy's pipeline pool (8 threads), then VmRSS at once
and over the next 10 s with the proxy's trimming after a burst
(``proxy/trim.py``). The baseline VmRSS (imports and test bodies, before the
first request) is printed too.

``--conversations`` Claude Code shaped conversations of about ``--size`` bytes
each go through the shipped chain (parse-reuse, identify, surgery), one turn
per conversation per round, interleaved as concurrent sessions arrive. The
second round comes past the TTL, so cuts are made and replayed from then on
(the sent body then differs from the received one: two copies per snapshot).
Printed: the process's resident memory (VmRSS) before and after, and what the
stages retain - parse-reuse's remembered bodies, the surgery memo's snapshots
(received + sent bytes, with their views), the economist's per-conversation
hash lists - against their byte budgets. Nothing is asserted: it prints figures.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scalpel_desktop.accounting.prices import PriceTable  # noqa: E402
from scalpel_desktop.wire.usage import Usage  # noqa: E402
from scalpel_desktop.pipeline.chain import Chain  # noqa: E402
from scalpel_desktop.surgery.memo import MEMO_MAX_BYTES  # noqa: E402
from scalpel_desktop.pipeline.identify import Identify  # noqa: E402
from scalpel_desktop.pipeline.parse_reuse import PARSE_REUSE_MAX_BYTES, ParseReuse  # noqa: E402
from scalpel_desktop.exchange import ApiRequest, ResponseResult  # noqa: E402
from scalpel_desktop.surgery.stage import build_surgery_stage  # noqa: E402
from scalpel_desktop.store.db import connect  # noqa: E402
from scalpel_desktop.surgery.testing import SessionBuilder, file_text  # noqa: E402
from scalpel_desktop.wire.jsoncodec import dumps  # noqa: E402

MB = 1024 * 1024


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


class Conversation(SessionBuilder):
    """A test session whose tool ids are its own (real ids are unique across conversations;
    the cut log is keyed by them)."""

    def __init__(self, c: int):
        self.c = c
        super().__init__(cwd=f"/home/user/proj{c}", session_id=f"00000000-0000-4000-8000-{c:012d}")

    def _id(self) -> str:
        self._n += 1
        return f"toolu_c{self.c:03d}_{self._n:06d}"


def grow(s: SessionBuilder, c: int, i: int) -> None:
    path = f"/home/user/proj{c}/src/mod{i % 37}.py"
    s.call("Read", {"file_path": path}, file_text(path, 60 + (i * 7) % 90, salt=f"{c}-{i // 37}"))
    if i % 5 == 0:
        s.call("Edit", {"file_path": path, "old_string": "a", "new_string": "b"}, f"The file {path} has been updated.")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--conversations", type=int, default=8)
    ap.add_argument("--size", type=int, default=2_900_000)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--parse-reuse-mb", type=float, default=None)
    ap.add_argument("--memo-mb", type=float, default=None)
    ap.add_argument("--requests", type=int, default=0, help="shipped stages, this many requests round robin")
    ap.add_argument("--burst", type=int, default=0, help="then this many concurrent bodies of 1-3 MB")
    ap.add_argument("--write-wait-ms", type=int, default=5000, help="the write_wait_ms setting (shipped: 50)")
    args = ap.parse_args(argv)
    os.environ.setdefault("SCALPEL_HOME", tempfile.mkdtemp(prefix="scalpel-home-"))
    if args.requests or args.burst:
        return shipped_run(args)
    if args.parse_reuse_mb is None:
        args.parse_reuse_mb = PARSE_REUSE_MAX_BYTES / MB
    if args.memo_mb is None:
        args.memo_mb = MEMO_MAX_BYTES / MB
    tmp = Path(tempfile.mkdtemp(prefix="scalpel-bench-memory-"))

    sessions: list[tuple[SessionBuilder, int]] = []
    for c in range(args.conversations):
        s = Conversation(c)
        i = 0
        while len(dumps(s.body())) < args.size:
            grow(s, c, i)
            i += 1
        sessions.append((s, i))

    reuse = ParseReuse(max_bytes=int(args.parse_reuse_mb * MB))
    stage = build_surgery_stage({"policy": "cold", "tier": 2}, connect(tmp / "l.db"), tmp / "spill", PriceTable.builtin())
    stage.memo.max_bytes = int(args.memo_mb * MB)
    chain = Chain([reuse, Identify(), stage])
    gc.collect()
    before = rss_mb()
    t = 1_000_000.0
    actions: dict[str, int] = {}
    for r in range(args.rounds):
        t += 4000 if r == 1 else 20  # round 1: past the TTL, cuts; then warm replays
        for c, (s, i) in enumerate(sessions):
            grow(s, c, i)
            sessions[c] = (s, i + 1)
            headers = {"anthropic-version": "2023-06-01", "anthropic-beta": "claude-code-20250219",
                       "x-claude-code-session-id": s.session_id}
            body = dumps(s.body())
            ex = chain.process(ApiRequest("POST", "/v1/messages", "beta=true", "anthropic", "messages", headers, body,
                                          t + c))
            ex.body_to_send()
            actions[ex.decision.label] = actions.get(ex.decision.label, 0) + 1
            chain.complete(ex, ResponseResult(200, Usage(cache_read=1000), 1, 1, t + c + 2))
            del ex, body
    gc.collect()
    after = rss_mb()
    econ = stage.economist.conversations
    hashes = sum(len(ms.unit_hashes) for conv in econ.values() for states in conv.models.values() for ms in states)
    views = sum(1 for snap in stage.memo._items.values() if snap.view is not None)
    print(f"# {args.conversations} conversations of ~{args.size / 1e6:.1f} MB, {args.rounds} rounds "
          f"({sum(actions.values())} requests: {actions}), Python {sys.version.split()[0]}")
    print("| what | retained | budget |")
    print("|---|---:|---:|")
    print(f"| parse-reuse bodies | {len(reuse)} bodies, {reuse.nbytes / MB:.1f} MB raw | {reuse.max_bytes / MB:.0f} MB, {reuse.size} bodies |")
    print(f"| surgery memo | {len(stage.memo)} snapshots ({views} with a view), {stage.memo.nbytes / MB:.1f} MB received + sent "
          f"| {stage.memo.max_bytes / MB:.0f} MB, {stage.memo.size} snapshots |")
    print(f"| economist | {len(econ)} conversations, {hashes:,} unit hashes (~{hashes * 57 / MB:.1f} MB) | - |")
    print()
    print(f"VmRSS before the requests {before:.1f} MB (the test sessions built), after {after:.1f} MB: "
          f"+{after - before:.1f} MB retained by the pipeline")
    return 0




def shipped_run(args) -> int:
    """``--requests``/``--burst``: the shipped stages, RSS over time."""
    import random
    import time
    from concurrent.futures import ThreadPoolExecutor

    from scalpel_desktop.pipeline.assemble import default_stages

    try:
        from scalpel_desktop.proxy.trim import limit_arenas, trim
    except ImportError:  # a checkout from before proxy/trim.py: compared as it ran then
        def limit_arenas() -> bool:
            return False

        def trim() -> bool:
            return False

    limit_arenas()
    tmp = Path(tempfile.mkdtemp(prefix="scalpel-bench-memory-"))
    # On a busy machine an fsynced spill can take longer than the request's write budget (no cut
    # then): by default the budget is raised here, so the figures are those of conversations cut.
    settings = {"policy": "cold", "tier": 2, "write_wait_ms": args.write_wait_ms}
    if args.memo_mb is not None:
        settings["memo_mb"] = int(args.memo_mb)
    if args.parse_reuse_mb is not None:
        settings["parse_reuse_mb"] = int(args.parse_reuse_mb)
    chain = Chain(default_stages(settings, db_path=tmp / "l.db", spill_dir=tmp / "spill",
                                 prices=PriceTable.builtin()))
    sessions = []
    for c in range(args.conversations):
        s = Conversation(c)
        i = 0
        while len(dumps(s.body())) < args.size:
            grow(s, c, i)
            i += 1
        sessions.append([s, i])
    gc.collect()
    base = rss_mb()
    print(f"# shipped stages, {args.conversations} conversations of ~{args.size / 1e6:.1f} MB, "
          f"{args.requests} requests round robin; budgets {settings}; Python {sys.version.split()[0]}")
    print(f"VmRSS before the first request (imports, the test conversations built): {base:.1f} MB")
    t = 1_000_000.0
    marks = {}
    for n in range(1, args.requests + 1):
        c = (n - 1) % len(sessions)
        s, i = sessions[c]
        grow(s, c, i)
        sessions[c][1] = i + 1
        t += 4000 if n == len(sessions) + 1 else 2  # once past the TTL: cuts made, then replayed
        headers = {"anthropic-version": "2023-06-01", "x-claude-code-session-id": s.session_id}
        body = dumps(s.body())
        ex = chain.process(ApiRequest("POST", "/v1/messages", "beta=true", "anthropic", "messages", headers, body, t))
        ex.body_to_send()
        chain.complete(ex, ResponseResult(200, Usage(cache_read=1000), 1, 1, t + 1))
        del ex, body
        if n % 100 == 0:
            marks[n] = rss_mb()
            print(f"  after {n:>5} requests: VmRSS {marks[n]:.1f} MB")
    if 500 in marks and args.requests in marks:
        print(f"growth from the 500th to the {args.requests}th request: {marks[args.requests] - marks[500]:+.1f} MB")
    memo = chain.get("surgery").memo
    reuse = chain.get("parse-reuse")
    print(f"held: surgery memo {len(memo)} snapshots, {memo.nbytes / MB:.1f} MB estimated; "
          f"parse-reuse {len(reuse)} bodies, {reuse.nbytes / MB:.1f} MB estimated")
    if args.burst:
        rng = random.Random(7)
        bodies = []
        for b in range(args.burst):
            s = Conversation(1000 + b)
            size = rng.randint(1_000_000, 3_000_000)
            i = 0
            while len(dumps(s.body())) < size:
                grow(s, 1000 + b, i)
                i += 1
            bodies.append((s.session_id, dumps(s.body())))
        before = rss_mb()

        def one(item):
            sid, body = item
            headers = {"anthropic-version": "2023-06-01", "x-claude-code-session-id": sid}
            ex = chain.process(ApiRequest("POST", "/v1/messages", "", "anthropic", "messages", headers, body, t))
            ex.body_to_send()
            chain.complete(ex, ResponseResult(200, Usage(cache_read=1000), 1, 1, t + 1))

        with ThreadPoolExecutor(max_workers=8) as pool:
            list(pool.map(one, bodies))
        del bodies
        gc.collect()
        peak = rss_mb()
        print(f"burst of {args.burst} bodies of 1-3 MB on 8 threads: VmRSS {before:.1f} MB before (bodies built), "
              f"{peak:.1f} MB right after (bodies dropped)")
        time.sleep(0.5)  # the proxy trims 0.5 s after the last large request finished
        trim()
        start = time.monotonic()
        while time.monotonic() - start < 10:
            print(f"  {time.monotonic() - start + 0.5:4.1f} s after: VmRSS {rss_mb():.1f} MB")
            time.sleep(2.5)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
