"""Replay real sessions through the SHIPPED surgery stage under each policy, priced on the real bill.

The baseline is the real bill: each request's usage counts at the price
table's rates. A policy costs, per session::

    real + (simulated with the policy - simulated without)

both arms from the one anchored simulator (``bench/simulate.py``), so what it
gets wrong the same way in both cancels. Its unmodified arm (``off``) is also
compared with the real bill: that is the check (``bench/check.py``).

For every sequence (a main thread, a sidechain, a subagent file), all arms go
in lockstep, request by request, so each body, its parsed document, its
layout, its request shape, its doom analysis and the verdict on each rewrite
of it are built once for all of them (``bench/stage_driver.py``,
``bench/shared_stage.py``; a hinted arm the usage tells no break is its plain
arm; an arm takes the unmodified arm's bills until its first cut,
``bench/arm.py``; ``share=False`` turns all of it off: the same figures,
slower). Sequences may replay on several processes
(``jobs``, ``bench/parallel.py``):

* ``off``: the unmodified requests;
* ``cold``, ``death`` and ``payback`` through ``surgery.stage.SurgeryStage``
  (the proxy's own code: economist, doom spans, surgeon, validator) with a
  temporary spill dir and cut log, the real timestamps, and only the breaks
  the live proxy can see (docs/claude-code-breaks.md: compaction, model
  switches, TTL expiry - from content and time alone); the simulated usage
  goes back to the stage as the response, as the proxy would see it. The warm
  policies get the user's history as the ledger would have held it: the
  sequences of the corpus that ended before this one started;
* ``cold:hinted`` (etc.): the same, told where the usage shows the read
  stopping short for no visible reason (``client_rewrite_at``): a break the
  live proxy of Claude Code 2.1.332 would not see, reported apart;
* ``naive`` and ``first-party``, bench-only comparisons, and ``ceiling``, the
  bound no policy can beat (``bench/policies.py``);
* ``keepalive``: the shipped cache keeper beside the default policy's stage,
  its pings decided by the proxy's own rule from the pauses the ledger would
  have held; ``as-5m``: a bench-only TTL choice (``bench/keepalive.py``).

Beside the arms, each sequence's cache misses in its real usage (no
simulation: ``bench/misses.py``), on ``SessionResult.misses``.

From Python::

    from scalpel_desktop.bench.replay import replay_corpus
    result = replay_corpus(path, policies=["off", "cold", "payback"], tier=2)
    result.policy("cold").saving_pct      # percent of the real bill
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scalpel_desktop.accounting.misses import Miss
from scalpel_desktop.bench import keepalive, parallel
from scalpel_desktop.bench.arm import Arm
from scalpel_desktop.bench.policies import CLEARED_TEXT, DoomCuts, FirstPartyCuts
from scalpel_desktop.bench.misses import sequence_misses
from scalpel_desktop.bench.ledger_view import budget_before, history_before, ledger_facts, waves
from scalpel_desktop.bench.ratio import ByteCounter, Ratio, measure, pool
from scalpel_desktop.bench.reader import FileResult, Sequence, read_corpus
from scalpel_desktop.bench.simulate import SequenceSimulator
from scalpel_desktop.surgery.remaining import History
from scalpel_desktop.bench.stage_driver import (
    SequenceBodies,
    StageDriver,
    scratch_dir,
    stub_tokens,
)

STAGE_POLICIES = ("cold", "death", "payback")
ALL_POLICIES = ("off", *STAGE_POLICIES, "naive", "first-party", *keepalive.ARMS)
HINTED = ":hinted"  # suffix of a stage arm told the breaks inferred from the usage (not provable live)
MIN_REQUESTS = 2  # a sequence of one request has nothing to replay


@dataclass
class SessionResult:
    name: str
    path: str
    kind: str
    model: str
    requests: int
    real_cost: float  # the usage counts at list prices
    costs: dict[str, float]  # arm -> SIMULATED cost ("off", each policy, "<stage policy>:hinted", "ceiling")
    ratio: Ratio
    cuts: dict[str, int] = field(default_factory=dict)  # arm -> results cut
    errors: dict[str, str] = field(default_factory=dict)  # arm -> error (that arm fell back to "off")
    ttl: str = "5m"
    budget: dict[str, tuple[float, float]] = field(default_factory=dict)  # stage arm -> (banked, staked) $
    bets: dict[str, list[tuple[int, int]]] = field(default_factory=dict)  # stage arm -> (turns est, earned)
    warm: dict[str, list[dict]] = field(default_factory=dict)  # stage arm -> each warm cut's figures
    misses: list[Miss] = field(default_factory=list)  # the real usage's cache misses (bench/misses.py)
    keeper: dict[str, dict] = field(default_factory=dict)  # keeper arm -> its pings, their cost, returns kept

    def cost(self, arm: str) -> float:
        """The arm's cost on the real bill: real + (simulated arm - simulated off)."""
        return self.real_cost + self.costs.get(arm, self.costs["off"]) - self.costs["off"]


@dataclass
class PolicyTotal:
    name: str
    cost: float
    saving_usd: float
    saving_pct: float  # of the real bill
    sessions_worse: int
    worst_session_pct: float  # the session made dearest, in percent of its real bill (negative: dearer)
    best_session_pct: float
    median_session_pct: float
    cuts: int
    # with the breaks inferred from the usage (not provable live): reported apart
    hinted_saving_usd: float = 0.0
    hinted_saving_pct: float = 0.0
    hinted_sessions_worse: int = 0


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


def check_policies(policies: Iterable[str]) -> list[str]:
    """The policy names, or ValueError naming the unknown one: checked once, before any
    replay, so an error inside one policy's run is that policy's (and not the session's)."""
    names = list(policies)
    for p in names:
        if p not in ALL_POLICIES:
            raise ValueError(f"unknown policy {p!r}; one of {', '.join(ALL_POLICIES)}")
    return names


def replay_sequence(seq: Sequence, prices, policies: Iterable[str] = ALL_POLICIES, tier: int = 2,
                    config: Mapping[str, Any] | None = None, ceiling: bool = True, hinted: bool = True,
                    counter: ByteCounter | None = None, pooled: Ratio | None = None,
                    scratch: str | None = None, history: Any = None, share: bool = True,
                    budgets: Mapping[str, Any] | None = None, bets: Mapping[str, Any] | None = None,
                    pauses: Any = None) -> SessionResult:
    """Every arm of one sequence, in lockstep. ``share=False``: every arm does its own work
    (no hinted arm taken for its plain one, each stage arm lays out, shapes and validates
    every body itself): the same figures, slower (``benchmarks/bench_speed.py``' baseline)."""
    from scalpel_desktop.config import KEYS
    from scalpel_desktop.wire.jsoncodec import dumps

    policies = check_policies(policies)
    cfg = {k: v.default for k, v in KEYS.items()}
    cfg.update(config or {})
    cfg["tier"] = tier
    sim = SequenceSimulator(seq, prices, counter=counter, pooled=pooled)
    bodies = SequenceBodies(seq, cfg, tier, share=share)
    sim.two_message_marks = bodies.markers.previous_message  # the simulator marks what the bodies carry
    stub = stub_tokens(sim)
    arms: dict[str, Any] = {"off": sim.arm()}
    drivers: dict[str, StageDriver] = {}
    cutters: dict[str, Any] = {}
    # A hinted arm told no break (the usage shows none) gets what its plain arm gets, request
    # by request: it is that arm, not run twice.
    same = share and not any(h is not None for h in bodies.hints(sim))
    order: dict[str, None] = {"off": None}  # every arm's name, in the order its figures are reported
    try:
        for name in policies:
            if name in STAGE_POLICIES:
                for arm_name, hints in ((name, False), (name + HINTED, True)):
                    if arm_name.endswith(HINTED) and not hinted:
                        continue
                    order[arm_name] = None
                    if hints and same:
                        continue
                    hist = history
                    if bets and bets.get(arm_name) and history is not None:  # the user's closed bets
                        hist = History.of(history.lengths, history.gaps, bets[arm_name], history.overruns)
                    d = drivers[arm_name] = StageDriver(seq, name, tier, prices, cfg, sim, bodies, hints=hints,
                                                        scratch=scratch, history=hist,
                                                        budget=(budgets or {}).get(arm_name))
                    arms[arm_name] = sim.arm(d.cuts_for, after=d.after)
                    arms[arm_name].pins_for = d.pins_for
                continue
            if name in keepalive.ARMS:  # the shipped keeper beside the default policy's stage; a TTL choice
                hist = History.of(history.lengths, history.gaps, (bets or {}).get(name, ()), history.overruns) \
                    if history is not None else None
                arms[name], d = keepalive.build(name, seq, sim, bodies, prices, cfg, tier, scratch, hist,
                                                (budgets or {}).get(name), pauses)
                if d is not None:
                    drivers[name] = d
            elif name == "naive":
                c = cutters[name] = DoomCuts(bodies.spans, stub, "naive")
                arms[name] = sim.arm(c)
            elif name == "first-party":
                cleared = sim.stub_tokens(len(dumps({"tool_use_id": "toolu_01" + "x" * 22, "type": "tool_result",
                                                     "content": CLEARED_TEXT})))
                c = cutters[name] = FirstPartyCuts(seq, lambda k: seq.requests[k].usage.prompt_tokens, cleared)
                arms[name] = sim.arm(c)
            if name in arms:
                order[name] = None
        if ceiling:
            order["ceiling"] = None
            arms["ceiling"] = sim.arm(DoomCuts(bodies.spans, stub, "ceiling"), free=True)
        if share:  # an arm takes the unmodified arm's bills until its first cut (bench/arm.py)
            for name, arm in arms.items():
                if name != "off" and type(arm) is Arm:
                    arm.follow(arms["off"])
        errors: dict[str, str] = {}
        for k in range(len(seq.requests)):
            for name, arm in arms.items():
                if arm.leader is None or name in errors:
                    continue
                try:
                    arm.prepare(k)  # its cuts of k, before the unmodified arm bills k
                except Exception as e:
                    errors[name] = f"{type(e).__name__}: {e}"[:200]
            for name, arm in arms.items():
                if name in errors:
                    continue
                try:
                    arm.step(k)
                except Exception as e:
                    if name == "off":
                        raise
                    errors[name] = f"{type(e).__name__}: {e}"[:200]
        for name, arm in arms.items():
            if isinstance(arm, keepalive.KeepAliveArm) and name not in errors:
                arm.finish()
    finally:
        for d in drivers.values():
            d.close()
    base = arms["off"].bill
    run = {name: name if name in arms else name[: -len(HINTED)] for name in order}  # arm -> the arm it is
    errors = {alias: e for name, e in errors.items() for alias in (name, name + HINTED)
              if alias == name or (alias in order and alias not in arms)}
    costs = {name: (base.sim_cost if name in errors else arms[run[name]].bill.sim_cost) for name in order}
    cuts = {name: len(drivers[run[name]].cuts) for name in order if run[name] in drivers}
    keeper: dict[str, dict] = {}
    for name, c in cutters.items():
        if name not in errors:
            cuts[name] = len(c.cuts) if isinstance(c, DoomCuts) else _count_cleared(seq, c)
    for name, arm in arms.items():
        if isinstance(arm, keepalive.KeepAliveArm):
            cuts[name] = arm.pings_sent  # the pings it sent
            if arm.driver is not None:
                keeper[name] = {"pings": arm.pings_sent, "ping_cost_usd": arm.bill.extra_cost, "kept": arm.kept,
                                "kept_saved_usd": arm.saved_usd}
    first = seq.requests[0].usage
    out = SessionResult(seq.name, str(seq.path), seq.kind, seq.requests[0].model, len(seq.requests),
                        base.real_cost, costs, sim.ratio, cuts, errors, "1h" if first.cache_write_1h > 0 else "5m",
                        misses=sequence_misses(seq, prices, float(cfg["ttl_margin_s"])))
    out.keeper = keeper
    for name in order:  # (a hinted arm that is its plain arm reports its plain arm's, as its costs do)
        d = drivers.get(run[name])
        if d is not None:
            out.budget[name], out.bets[name], out.warm[name] = d.budget_used(), d.bet_outcomes(), d.warm
    return out


def _count_cleared(seq: Sequence, fp: FirstPartyCuts) -> int:
    return len(fp(len(seq.requests) - 1, seq.requests[-1]))


def replay_corpus(root: Path | str | None = None, policies: Iterable[str] = ALL_POLICIES, tier: int = 2,
                  config: Mapping[str, Any] | None = None, prices=None,
                  progress: Callable[[int, int], None] | None = None,
                  max_requests: int = 5000, files: list[FileResult] | None = None,
                  hinted: bool = True, share: bool = True, jobs: int = 1, budget_usd: float = 0.0) -> ReplayResult:
    """Replay every sequence under ``root`` (default: the user's own transcripts).

    ``budget_usd``: the risk budget the user's ledger held before the first sequence (0: a fresh
    install; ``surgery/budget.py``), every stage arm's.

    ``share``: see ``replay_sequence``; ``jobs``: processes to replay the sequences on
    (``bench/parallel.py``: the same figures, in the same order, as one)."""
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
    counter = ByteCounter()
    # the user's own data, for a sequence that measured nothing itself
    pooled = pool(measure(s, counter) for s in seqs)
    scratch = scratch_dir()
    ledger = ledger_facts(seqs)

    got: list[Any] = [parallel.FAILED] * len(seqs)

    def one(i: int) -> SessionResult:
        seq = seqs[i]
        budgets, bets = budget_before(seqs, seq, got, policies, budget_usd)
        return replay_sequence(seq, prices, policies, tier, config, hinted=hinted, counter=counter, pooled=pooled,
                               scratch=scratch, history=history_before(seqs, seq, ledger), share=share,
                               budgets=budgets, bets=bets, pauses=keepalive.pauses_before(seqs, seq, ledger))

    try:
        # In waves of sequences that need nothing of each other: a sequence starts with the budget and
        # the bets of those that ended before it started. A session that breaks the bench is counted, not fatal.
        done = 0
        for wave in waves(seqs):
            def job(w: int, wave=wave) -> SessionResult:
                return one(wave[w])

            tick = (lambda d, n, base=done: progress(base + d, len(seqs))) if progress else None
            n = jobs if len(wave) >= 4 else 1  # (a pool of workers costs more than it saves on a short wave)
            for i, r in zip(wave, parallel.run_all(job, len(wave), n, [len(seqs[i].requests) for i in wave], tick)):
                got[i] = r
            done += len(wave)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    out = [r for r in got if r is not parallel.FAILED]
    skipped["errors"] += len(got) - len(out)
    return ReplayResult(out, skipped, len(results), sum(f.lines for f in results),
                        sum(f.bad_lines for f in results), ["off"] + [p for p in policies if p != "off"], tier)


def totals_for(sessions: list[SessionResult], name: str) -> PolicyTotal:
    """A policy's totals on the real bill (``ceiling`` too)."""
    real = sum(s.real_cost for s in sessions)
    cost = sum(s.cost(name) for s in sessions)
    pcts = sorted(_pct(s.real_cost, s.cost(name)) for s in sessions)
    worse = sum(1 for s in sessions if s.costs.get(name, s.costs["off"]) > s.costs["off"] * (1 + 1e-9) + 1e-9)
    median = pcts[len(pcts) // 2] if pcts else 0.0
    hname = name + HINTED if any(name + HINTED in s.costs for s in sessions) else name
    hinted_cost = sum(s.cost(hname) for s in sessions)
    hinted_worse = sum(1 for s in sessions
                       if s.costs.get(hname, s.costs["off"]) > s.costs["off"] * (1 + 1e-9) + 1e-9)
    return PolicyTotal(
        name=name,
        cost=cost,
        saving_usd=real - cost,
        saving_pct=_pct(real, cost),
        sessions_worse=worse,
        worst_session_pct=min(pcts) if pcts else 0.0,
        best_session_pct=max(pcts) if pcts else 0.0,
        median_session_pct=median,
        cuts=sum(s.cuts.get(name, 0) for s in sessions),
        hinted_saving_usd=real - hinted_cost,
        hinted_saving_pct=_pct(real, hinted_cost),
        hinted_sessions_worse=hinted_worse,
    )


def _pct(base: float, cost: float) -> float:
    """Saving in percent of ``base`` (negative: more expensive)."""
    return 100.0 * (base - cost) / base if base > 0 else 0.0
