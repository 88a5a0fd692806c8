"""Latency the full pipeline adds to a Claude Code shaped request, against pass-through.

Run: ``python benchmarks/pipeline.py [--rounds N]``

For request bodies of about 300 KB and 2.9 MB it times, side by side in one
run, what the proxy does between receiving a request and forwarding it:

* pass-through: the proxy with no stage (forward the bytes as they came);
* warm: the full pipeline (parse-reuse + identify + surgery) on a warm
  conversation - the previous request of the conversation was processed,
  nothing is cut;
* warm, no parse reuse: the same without the parse-reuse stage (every body
  parsed whole by the lazy ``Exchange.doc``);
* replaying cuts: earlier cuts are re-applied to every request (serialize,
  validate) - the steady state after a natural break;
* cutting: a request that arrives past the TTL and is cut (spill, stub, log);
* cutting, spill not fsynced: the same with the spill files written but not
  fsynced (``SpillStore(durable=False)``, never done for real cuts): the
  difference between the two is the disk's fsync time, the rest is CPU;
* first sighting: a conversation the pipeline has never seen (a resume, a
  restart, a conversation evicted from the memo and unknown to the economist):
  a fresh pipeline for every round. Also timed: ``complete`` (what the stages
  do after the response: a first sighting is laid out and analysed there, off
  the request path).

``--sizes 0.3,2.9,10`` (MB) sets the body sizes; ``--cases`` picks cases by name;
``--policy death`` runs them under the shipped default policy (``cold`` otherwise).

Each round appends one turn to the conversation, as Claude Code does, so the
stage can reuse what it learnt from the previous request. The median and p90
over the rounds are printed, and the added median against pass-through.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scalpel_desktop.accounting.prices import PriceTable  # noqa: E402
from scalpel_desktop.wire.usage import Usage  # noqa: E402
from scalpel_desktop.pipeline.chain import Chain  # noqa: E402
from scalpel_desktop.pipeline.identify import Identify  # noqa: E402
from scalpel_desktop.pipeline.parse_reuse import ParseReuse  # noqa: E402
from scalpel_desktop.exchange import ApiRequest, ResponseResult  # noqa: E402
from scalpel_desktop.surgery.stage import build_surgery_stage  # noqa: E402
from scalpel_desktop.store.db import connect  # noqa: E402
from scalpel_desktop.surgery.testing import SessionBuilder, file_text  # noqa: E402
from scalpel_desktop.wire.jsoncodec import dumps  # noqa: E402

POLICY = ["cold"]  # --policy: the surgery policy of every case

HEADERS = {"anthropic-version": "2023-06-01", "anthropic-beta": "claude-code-20250219",
           "x-claude-code-session-id": "00000000-0000-4000-8000-000000000001"}


def grow(s: SessionBuilder, i: int) -> None:
    """One agent turn: a read of a file (re-read every few turns), sometimes an edit."""
    path = f"/home/user/proj/src/mod{i % 37}.py"
    s.call("Read", {"file_path": path}, file_text(path, 60 + (i * 7) % 90, salt=str(i // 37)))
    if i % 5 == 0:
        s.call("Edit", {"file_path": path, "old_string": "a", "new_string": "b"}, f"The file {path} has been updated.")


def session_of(size: int) -> tuple[SessionBuilder, int]:
    s = SessionBuilder()
    i = 0
    while len(dumps(s.body())) < size:
        grow(s, i)
        i += 1
    return s, i


def request(body: bytes, at: float) -> ApiRequest:
    return ApiRequest("POST", "/v1/messages", "beta=true", "anthropic", "messages", HEADERS, body, at)


def first_sightings(size: int, rounds: int) -> tuple[list[float], list[float]]:
    """(request-path ms, after-the-response ms) of a body no pipeline has seen before."""
    prices = PriceTable.builtin()
    s, _ = session_of(size)
    body = dumps(s.body())
    before, after = [], []
    for r in range(rounds):
        tmp = tempfile.mkdtemp(prefix="scalpel-bench-pipeline-")
        stage = build_surgery_stage({"policy": POLICY[0], "tier": 2}, connect(Path(tmp) / "l.db"), Path(tmp) / "spill",
                                    prices)
        chain = Chain([ParseReuse(), Identify(), stage])
        start = time.perf_counter()
        ex = chain.process(request(body, 1_000_000.0))
        ex.body_to_send()
        before.append((time.perf_counter() - start) * 1000)
        start = time.perf_counter()
        chain.complete(ex, ResponseResult(200, Usage(cache_read=1000), 1, 1, 1_000_002.0))
        after.append((time.perf_counter() - start) * 1000)
        assert ex.body_to_send() is body and ex.surgery is not None  # forwarded as it came, then analysed
    return before, after


def run_case(size: int, case: str, rounds: int) -> list[float]:
    tmp = tempfile.mkdtemp(prefix="scalpel-bench-pipeline-")
    prices = PriceTable.builtin()
    # A generous write budget: the first cut of a 2.9 MB conversation spills hundreds of files,
    # whose fsyncs on a busy machine outlast the shipped 50 ms (no cut then: benchmarks/stall.py).
    config = {"policy": POLICY[0], "tier": 2, "write_wait_ms": 5000}
    if case == "first sighting":
        return first_sightings(size, rounds)[0]
    if case == "pass-through":
        chain = Chain([])
    else:
        stage = build_surgery_stage(config, connect(Path(tmp) / "l.db"), Path(tmp) / "spill", prices)
        if case == "cutting, spill not fsynced":
            stage.spill.durable = False
        first = [] if case == "warm, no parse reuse" else [ParseReuse()]
        chain = Chain([*first, Identify(), stage])
    s, i = session_of(size)
    t = 1_000_000.0
    # Warm the conversation up: the first request is "first seen".
    ex = chain.process(request(dumps(s.body()), t))
    chain.complete(ex, ResponseResult(200, Usage(cache_read=1000), 1, 1, t + 2))
    if case in ("replaying cuts",):
        t += 4000  # past the TTL: this request cuts, the timed ones replay
        grow(s, i)
        i += 1
        ex = chain.process(request(dumps(s.body()), t))
        chain.complete(ex, ResponseResult(200, Usage(cache_read=1000), 1, 1, t + 2))
        assert "cut" in ex.decision.changes, ex.decision.reason
    times = []
    for r in range(rounds):
        cutting = case.startswith("cutting")
        if cutting:
            # Three files read then edited (three superseded reads, a batch worth cutting).
            for j in range(3):
                path = f"/home/user/proj/new/r{r}_{j}.py"
                s.call("Read", {"file_path": path}, file_text(path, 200))
                s.call("Edit", {"file_path": path, "old_string": "a", "new_string": "b"}, "updated")
        grow(s, i)
        i += 1
        t += 4000 if cutting else 20
        body = dumps(s.body())
        req = request(body, t)
        start = time.perf_counter()
        ex = chain.process(req)
        out = ex.body_to_send()
        elapsed = time.perf_counter() - start
        times.append(elapsed * 1000)
        if cutting:
            assert "cut" in ex.decision.changes, ex.decision.reason
        if case == "replaying cuts":
            assert out is not body and ex.decision.figures.get("replayed", 0) > 0
        chain.complete(ex, ResponseResult(200, Usage(cache_read=1000), 1, 1, t + 2))
    return times


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=25)
    ap.add_argument("--sizes", default="0.3,2.9", help="body sizes in MB, comma-separated")
    ap.add_argument("--cases", default="", help="comma-separated case names (default: all)")
    ap.add_argument("--policy", default="cold", help="surgery policy (default cold; the shipped default is death)")
    args = ap.parse_args(argv)
    POLICY[0] = args.policy
    os.environ.setdefault("SCALPEL_HOME", tempfile.mkdtemp(prefix="scalpel-home-"))
    cases = ["pass-through", "warm", "warm, no parse reuse", "replaying cuts", "cutting", "cutting, spill not fsynced",
             "first sighting"]
    if args.cases:
        wanted = [c.strip() for c in args.cases.split(",")]
        cases = ["pass-through"] + [c for c in cases if c in wanted and c != "pass-through"]
    print(f"{'body':>8}  {'case':<26} {'median ms':>10} {'p90 ms':>8} {'added median ms':>16}")
    for mb in (float(x) for x in args.sizes.split(",")):
        label, size = (f"{mb * 1000:.0f} KB" if mb < 1 else f"{mb:g} MB"), int(mb * 1_000_000)
        base = None
        for case in cases:
            if case == "first sighting":
                req_ms, after_ms = first_sightings(size, args.rounds)
                after_ms.sort()
                print(f"{label:>8}  {'first sighting, after':<26} {statistics.median(after_ms):>10.2f} "
                      f"{after_ms[int(len(after_ms) * 0.9) - 1]:>8.2f} {'(off the path)':>16}")
                times = sorted(req_ms)
            else:
                times = sorted(run_case(size, case, args.rounds))
            med = statistics.median(times)
            p90 = times[int(len(times) * 0.9) - 1]
            if base is None:
                base = med
            print(f"{label:>8}  {case:<26} {med:>10.2f} {p90:>8.2f} {med - base:>16.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
