"""Replay real sessions through the SHIPPED surgery stage under each policy.

For every sequence (a main thread, a sidechain, a subagent file):

1. a baseline pass (policy ``off``) bills the unmodified requests through the
   cache model and finds the client's own cache breaks in the real usage
   (``bench/simulate.py``);
2. ``cold`` and ``payback`` run each request, with its real timestamp, through
   ``surgery.stage.SurgeryStage`` (the proxy's own code: economist,
   doom spans, surgeon, validator) with a temporary spill dir and cut log; the
   stubs it sends are billed, and the simulated usage goes back to the stage
   as the response, as the proxy would see it;
3. ``naive`` and ``first-party`` are bench-only comparisons, ``ceiling`` the
   bound no policy can beat (``bench/policies.py``).

Savings are measured against the baseline's simulated cost (one model for
every arm), at list prices from ``accounting/prices.py``.

From Python::

    from scalpel_desktop.bench.replay import replay_corpus
    result = replay_corpus(path, policies=["off", "cold", "payback"], tier=2,
                           config={"payback_factor": 2.0})
    result.policy("cold").saving_pct
"""

from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from scalpel_desktop.wire.usage import Usage
from scalpel_desktop.bench.policies import DoomCuts, FirstPartyCuts, stub_tokens
from scalpel_desktop.bench.reader import FileResult, Request, Sequence, read_corpus
from scalpel_desktop.bench.simulate import SequenceBill, SequenceSimulator, Stub

ALL_POLICIES = ("off", "cold", "payback", "naive", "first-party")
STAGE_POLICIES = ("cold", "payback")
MIN_REQUESTS = 2  # a sequence of one request has nothing to replay


@dataclass
class SessionResult:
    name: str
    path: str
    kind: str
    model: str
    requests: int
    real_cost: float
    check_cost: float  # simulated from content + first usage only
    costs: dict[str, float]  # policy -> simulated cost (incl. "off" and "ceiling")
    breaks: int
    prefix_tokens: int
    cuts: dict[str, int] = field(default_factory=dict)  # policy -> results cut
    errors: dict[str, str] = field(default_factory=dict)  # policy -> error (fell back to "off")
    last_real_prompt: int = 0  # the last request's real prompt tokens
    last_check_prompt: int = 0  # ... as the check estimated it from content
    ttl: str = "5m"


@dataclass
class PolicyTotal:
    name: str
    cost: float
    saving_usd: float
    saving_pct: float
    sessions_worse: int
    worst_session_pct: float
    best_session_pct: float
    median_session_pct: float
    cuts: int


@dataclass
class ReplayResult:
    sessions: list[SessionResult]
    skipped: dict[str, int]
    files: int
    lines: int
    bad_lines: int
    policies: list[str]
    tier: int

    def policy(self, name: str) -> PolicyTotal:
        return totals_for(self.sessions, name)


class StageDriver:
    """Runs one sequence's requests through a private SurgeryStage."""

    def __init__(self, seq: Sequence, policy: str, tier: int, prices, config: Mapping[str, Any] | None = None,
                 sim: SequenceSimulator | None = None, breaks: list | None = None):
        from scalpel_desktop.surgery.stage import SurgeryStage
        from scalpel_desktop.store.db import connect
        from scalpel_desktop.store.spill import SpillStore
        from scalpel_desktop.store.cutlog import CutLog
        from scalpel_desktop.surgery.economist import Economist

        self.seq = seq
        self.tmp = tempfile.mkdtemp(prefix="scalpel-bench-")
        cfg = dict(config or {})
        cfg["policy"], cfg["tier"] = policy, tier  # after the defaults, or every arm would run "cold"
        # The client's own cache breaks, found in the real usage (a transcript does not show the
        # rewritten bytes; the live proxy sees them by comparing requests): shown to the stage.
        self.sim, self.breaks = sim, breaks or []
        self.conn = connect(Path(":memory:"))  # the surgery log of this replay only
        self.stage = SurgeryStage(cfg, SpillStore(Path(self.tmp) / "spill"), CutLog(self.conn),
                                  Economist(cfg, prices), prices)
        self.stub = stub_tokens()
        self.cuts: dict[str, Stub] = {}
        self._ex = None
        self.headers = {"x-claude-code-session-id": seq.session_id}
        if seq.kind != "main" and seq.agent_id:
            self.headers["x-claude-code-agent-id"] = seq.agent_id
        self.ttl = None

    def close(self) -> None:
        try:
            self.conn.close()
        finally:
            shutil.rmtree(self.tmp, ignore_errors=True)

    def body(self, k: int, req: Request) -> bytes:
        from scalpel_desktop.wire.jsoncodec import dumps

        u = req.usage
        if u.cache_write_1h > 0:
            self.ttl = "1h"
        elif u.cache_write_5m > 0:
            self.ttl = "5m"
        marker: dict[str, Any] = {"type": "ephemeral"}
        if self.ttl == "1h":
            marker["ttl"] = "1h"
        msgs = req.messages
        if msgs:
            last = dict(msgs[-1])
            content = list(last["content"])
            if content:
                content[-1] = dict(content[-1], cache_control=marker)
            last["content"] = content
            msgs[-1] = last
        doc = {
            "model": req.model,
            "max_tokens": 32000,
            "system": [{"type": "text", "text": "(system prompt: not in the transcript)", "cache_control": marker}],
            "messages": msgs,
            "metadata": {"user_id": json.dumps({"session_id": self.seq.session_id})},
            "stream": True,
        }
        return dumps(doc)

    def cuts_for(self, k: int, req: Request) -> dict[str, Stub]:
        from scalpel_desktop.exchange import ApiRequest, Exchange

        api = ApiRequest("POST", "/v1/messages", "beta=true", "anthropic", "messages", self.headers,
                         self.body(k, req), req.ts)
        ex = Exchange(api, model=req.model)
        hint = self.rewrite_at(k, req)
        if hint is not None:
            ex.client_rewrite_at = hint
        self.stage.on_request(ex)
        self._ex = ex
        sent = ex.surgery
        cuts: dict[str, Stub] = {}
        if sent is not None:
            for tid, _pos, _saved, _kind in sent.stubs:
                cuts[tid] = self.cuts.setdefault(tid, Stub("stage:" + tid, self.stub))
        return cuts

    def rewrite_at(self, k: int, req: Request) -> int | None:
        """The message index at which the real usage shows request ``k``'s cache read stopping."""
        b = self.breaks[k] if k < len(self.breaks) else None
        if b is None or self.sim is None:
            return None
        keys, _roles, _tokens = self.sim.units(k, None)
        line = next((key[0] for key in keys[b:] if isinstance(key[0], int)), None)
        if line is None:
            return None
        msg, prev = -1, None
        for ln in req.history:  # bench.reader.to_messages merges consecutive same-role lines
            if ln.role != prev:
                msg, prev = msg + 1, ln.role
            if ln.index == line:
                return max(0, msg)
        return None

    def after(self, k: int, req: Request, usage: Usage) -> None:
        from scalpel_desktop.exchange import ResponseResult

        ex = self._ex
        if ex is None:
            return
        ex.response = ResponseResult(200, usage, None, None, req.ts_done)
        self.stage.on_response(ex)
        self._ex = None


def check_policies(policies: Iterable[str]) -> list[str]:
    """The policy names, or ValueError naming the unknown one: checked once, before any
    replay, so an error inside one policy's run is that policy's (and not the session's)."""
    names = list(policies)
    for p in names:
        if p not in ALL_POLICIES:
            raise ValueError(f"unknown policy {p!r}; one of {', '.join(ALL_POLICIES)}")
    return names


def replay_sequence(seq: Sequence, prices, policies: Iterable[str] = ALL_POLICIES, tier: int = 2,
                    config: Mapping[str, Any] | None = None, ceiling: bool = True) -> SessionResult:
    from scalpel_desktop.config import KEYS

    policies = check_policies(policies)
    cfg = {k: v.default for k, v in KEYS.items()}
    cfg.update(config or {})
    cfg["tier"] = tier
    check = SequenceSimulator(seq, prices, mode="check").run()
    sim = SequenceSimulator(seq, prices, mode="replay")
    base = sim.run(detect_breaks=True)
    breaks = base.breaks
    costs: dict[str, float] = {"off": base.sim_cost}
    spans: dict[int, list] = {}  # doom spans per request, shared by naive and the ceiling
    cuts: dict[str, int] = {}
    errors: dict[str, str] = {}
    for name in policies:
        if name == "off":
            continue
        bill: SequenceBill | None = None
        try:
            if name in STAGE_POLICIES:
                driver = StageDriver(seq, name, tier, prices, cfg, sim, breaks)
                try:
                    bill = sim.run(driver.cuts_for, breaks=breaks, after=driver.after)
                finally:
                    driver.close()
                cuts[name] = len(driver.cuts)
            elif name == "naive":
                dc = DoomCuts(seq, cfg, tier, "naive", spans)
                bill = sim.run(dc, breaks=breaks)
                cuts[name] = len(dc.cuts)
            elif name == "first-party":
                totals = [r.tokens for r in base.requests]
                fp = FirstPartyCuts(seq, lambda k: totals[k])
                bill = sim.run(fp, breaks=breaks)
                cuts[name] = _count_cleared(seq, fp)
        except Exception as e:  # noqa: BLE001 - one policy's failure is reported, the bench goes on
            errors[name] = f"{type(e).__name__}: {e}"[:200]
            bill = None
        costs[name] = bill.sim_cost if bill is not None else base.sim_cost
    if ceiling:
        dc = DoomCuts(seq, cfg, tier, "ceiling", spans)
        costs["ceiling"] = sim.run(dc, breaks=breaks, free=True).sim_cost
    return SessionResult(seq.name, str(seq.path), seq.kind, seq.requests[0].model, len(seq.requests),
                         base.real_cost, check.sim_cost, costs, base.breaks_used, sim.prefix_tokens, cuts, errors,
                         seq.requests[-1].usage.prompt_tokens, check.requests[-1].tokens, check.ttl)


def _count_cleared(seq: Sequence, fp: FirstPartyCuts) -> int:
    last = seq.requests[-1]
    return len(fp(len(seq.requests) - 1, last))


def replay_corpus(root: Path | str | None = None, policies: Iterable[str] = ALL_POLICIES, tier: int = 2,
                  config: Mapping[str, Any] | None = None, prices=None,
                  progress: Callable[[int, int], None] | None = None,
                  max_requests: int = 5000, files: list[FileResult] | None = None) -> ReplayResult:
    """Replay every sequence under ``root`` (default: the user's own transcripts)."""
    if prices is None:
        from scalpel_desktop.accounting.prices import PriceTable

        prices = PriceTable.load()
    policies = check_policies(policies)
    results = files if files is not None else read_corpus(Path(root) if root is not None else None)
    skipped = {"too_short": 0, "oversized": 0, "unreadable": 0, "errors": 0, "no_requests": 0}
    seqs: list[Sequence] = []
    for fr in results:
        if fr.skipped:
            skipped[fr.skipped] = skipped.get(fr.skipped, 0) + 1
            continue
        if not fr.sequences:
            skipped["no_requests"] += 1
        for seq in fr.sequences:
            if len(seq.requests) < MIN_REQUESTS:
                skipped["too_short"] += 1
            elif len(seq.requests) > max_requests:
                skipped["oversized"] += 1
            else:
                seqs.append(seq)
    out: list[SessionResult] = []
    for i, seq in enumerate(seqs):
        try:
            out.append(replay_sequence(seq, prices, policies, tier, config))
        except Exception:  # noqa: BLE001 - a session that breaks the bench is counted, not fatal
            skipped["errors"] += 1
        if progress:
            progress(i + 1, len(seqs))
    return ReplayResult(out, skipped, len(results), sum(f.lines for f in results),
                        sum(f.bad_lines for f in results), ["off"] + [p for p in policies if p != "off"], tier)


def totals_for(sessions: list[SessionResult], name: str) -> PolicyTotal:
    base = sum(s.costs["off"] for s in sessions)
    cost = sum(s.costs.get(name, s.costs["off"]) for s in sessions)
    pcts = sorted(_pct(s.costs["off"], s.costs.get(name, s.costs["off"])) for s in sessions)
    worse = sum(1 for s in sessions if s.costs.get(name, s.costs["off"]) > s.costs["off"] * (1 + 1e-9) + 1e-9)
    median = pcts[len(pcts) // 2] if pcts else 0.0
    return PolicyTotal(
        name=name,
        cost=cost,
        saving_usd=base - cost,
        saving_pct=_pct(base, cost),
        sessions_worse=worse,
        worst_session_pct=min(pcts) if pcts else 0.0,
        best_session_pct=max(pcts) if pcts else 0.0,
        median_session_pct=median,
        cuts=sum(s.cuts.get(name, 0) for s in sessions),
    )


def _pct(base: float, cost: float) -> float:
    """Saving in percent of ``base`` (negative: more expensive)."""
    return 100.0 * (base - cost) / base if base > 0 else 0.0
