"""What a locked ledger adds to a request, side by side with no lock, in one run.

Run: ``python benchmarks/stall.py [--rounds 8] [--size 300000]``

The shipped stages (``assemble.default_stages``: parse-reuse, identify, the
tool inventory and filter - on, one built-in removed - surgery, cold policy),
with and without another process holding ``BEGIN EXCLUSIVE`` on the ledger
database. Two kinds of request are timed (``chain.process``, what the proxy
does before it forwards): a new session's first request (its tool-filter pin
must be stored) and a request past the TTL with a batch of superseded reads
(a cut is due: spill, then a cut-log row). Printed per case: median and
maximum ms, and what was decided. Before this change each of those writes
waited on SQLite's 5 s busy timeout; now a request waits ``write_wait_ms``
(50 ms) at most in all, and goes out without what the write was for.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from scalpel_desktop.accounting.prices import PriceTable  # noqa: E402
from scalpel_desktop.exchange import ApiRequest, ResponseResult  # noqa: E402
from scalpel_desktop.pipeline.assemble import close_stages, default_stages  # noqa: E402
from scalpel_desktop.pipeline.chain import Chain  # noqa: E402
from scalpel_desktop.surgery.testing import SessionBuilder, file_text  # noqa: E402
from scalpel_desktop.tools.store import ToolStore  # noqa: E402
from scalpel_desktop.wire.jsoncodec import dumps  # noqa: E402
from scalpel_desktop.wire.usage import Usage  # noqa: E402

sys.path.insert(0, str(REPO / "tests" / "support"))
from db_lock import exclusive_lock  # noqa: E402


def _request(sid: str, body: bytes, at: float) -> ApiRequest:
    headers = {"anthropic-version": "2023-06-01", "x-claude-code-session-id": sid}
    return ApiRequest("POST", "/v1/messages", "", "anthropic", "messages", headers, body, at)


class Conversation(SessionBuilder):
    """Tool ids of its own (the cut log is keyed by them: real ids are unique across conversations)."""

    def __init__(self, c: int):
        self.c = c
        super().__init__(session_id=f"00000000-0000-4000-8000-{c:012d}")

    def _id(self) -> str:
        self._n += 1
        return f"toolu_c{self.c:03d}_{self._n:06d}"


def _grow(s: SessionBuilder, tag: str) -> None:
    """Reads of distinct files: nothing dead."""
    s.call("Read", {"file_path": f"/home/user/proj/{tag}.py"}, file_text(tag, 60))


def _reads(s: SessionBuilder, tag: str, lines: int) -> None:
    """Three files read then edited: their reads superseded, a batch worth cutting."""
    for j in range(3):
        path = f"/home/user/proj/{tag}_{j}.py"
        s.call("Read", {"file_path": path}, file_text(path, lines))
        s.call("Edit", {"file_path": path, "old_string": "a", "new_string": "b"}, "updated")
    s.call("Read", {"file_path": f"/home/user/proj/{tag}_last.py"}, file_text("x", 20))


def run(locked: bool, rounds: int, size: int) -> dict[str, list]:
    tmp = Path(tempfile.mkdtemp(prefix="scalpel-stall-"))
    db = tmp / "ledger.sqlite3"
    settings = {"policy": "cold", "tier": 2, "tool_filter": True}
    store = ToolStore.open(db)
    store.add_removal("Workflow", "cli", forced=True)
    stages = default_stages(settings, db_path=db, spill_dir=tmp / "spill", prices=PriceTable.builtin())
    chain = Chain(stages)
    convs = []
    t = 1_000_000.0
    for r in range(rounds):  # conversations warmed up (and pinned) before any lock
        s = Conversation(r)
        while len(dumps(s.body())) < size:
            _grow(s, f"w{r}_{len(s.body()['messages'])}")
        ex = chain.process(_request(s.session_id, dumps(s.body()), t))
        chain.complete(ex, ResponseResult(200, Usage(cache_read=1000), 1, 1, t + 1))
        convs.append(s)
    out: dict[str, list] = {"new session (pin)": [], "cut due (spill + log)": []}
    surgeon = chain.get("surgery").surgeon
    waits: list[float] = []
    for name in ("_spill", "commit"):  # the time spent waiting on writes, apart from the CPU work
        real = getattr(surgeon, name, None)
        if real is None:  # a checkout from before the bounded writes
            continue

        def timed(*a, _real=real, **k):
            start = time.perf_counter()
            try:
                return _real(*a, **k)
            finally:
                waits.append((time.perf_counter() - start) * 1000)
        setattr(surgeon, name, timed)
    out["waits"] = waits
    ctx = exclusive_lock(db) if locked else None
    if ctx is not None:
        ctx.__enter__()
    try:
        t += 4000  # past every TTL
        for r in range(rounds):
            fresh = Conversation(1000 + r)
            fresh.user("hello")
            start = time.perf_counter()
            ex = chain.process(_request(fresh.session_id, dumps(fresh.body()), t))
            out["new session (pin)"].append(((time.perf_counter() - start) * 1000, ex.decision.label,
                                             (ex.tool_filter.left_alone if ex.tool_filter else "") or "pinned in time"))
            chain.complete(ex, ResponseResult(200, Usage(cache_read=1000), 1, 1, t + 1))
            s = convs[r]
            _reads(s, f"due{r}", 200)
            start = time.perf_counter()
            ex = chain.process(_request(s.session_id, dumps(s.body()), t + 1))
            out["cut due (spill + log)"].append(((time.perf_counter() - start) * 1000, ex.decision.label,
                                                 ex.decision.reason[:60]))
            chain.complete(ex, ResponseResult(200, Usage(cache_read=1000), 1, 1, t + 2))
    finally:
        if ctx is not None:
            ctx.__exit__(None, None, None)
        close_stages(stages)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--size", type=int, default=300_000)
    args = ap.parse_args(argv)
    os.environ.setdefault("SCALPEL_HOME", tempfile.mkdtemp(prefix="scalpel-home-"))
    print(f"# {args.rounds} rounds, conversations of ~{args.size / 1e3:.0f} KB, write_wait_ms 50 (the default)")
    print("| case | ledger | median ms | max ms | decisions |")
    print("|---|---|---:|---:|---|")
    for locked in (False, True):
        got = run(locked, args.rounds, args.size)
        waits = got.pop("waits")
        for case, rows in got.items():
            ms = [r[0] for r in rows]
            kinds: dict[str, int] = {}
            for _, action, why in rows:
                kinds[f"{action}: {why}"] = kinds.get(f"{action}: {why}", 0) + 1
            print(f"| {case} | {'locked by another process' if locked else 'free'} | {statistics.median(ms):.1f} "
                  f"| {max(ms):.1f} | {'; '.join(f'{n}x {k}' for k, n in kinds.items())} |")
        if waits:
            print(f"| (of which waiting for the spill and the cut log) | {'locked' if locked else 'free'} "
                  f"| {statistics.median(waits):.1f} per write | {max(waits):.1f} | |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
