"""A MOVED MARKER'S WARM CUT IS NEVER DEARER THAN PRICED, UNDER EVERY READING, EVEN WHEN THE CLIENT REWRITES.

Claude Code before 2.1 sends all 4 cache markers (two in the system prompt, the
last block of each of the last two messages): a warm cut's pin takes the one on
``messages[-2]`` (``surgery/pin.py``). That request still writes its entry at
its last message; what it no longer writes is the entry at ``messages[-2]``,
which a request replacing its last message would have read (Esc withdraws a
turn, ``docs/claude-code-breaks.md``). ``surgery/payback.py`` prices that
fallback's re-write into the bet.

Generated sessions in that layout, where a big read dies a turn or two after it
was made (a cut at death, pinned by the moved marker), sometimes followed at
once or a turn later by a request that replaces the cut request's last
message, at gaps up to past the TTL. Billed directly and through the pipeline
(a funded risk budget: the property is the price, not the budget) under each
of the 6 readings (lookback 12, 20, 28; a hit refreshes each breakpoint's
entry or only the one read):

* every moved-marker body is the original with its replayed stubs and exactly
  that marker moved (``pin_problems``), every body valid;
* the cut request reads at least up to the pin; a request replacing its last
  message within the moved marker's TTL reads at least up to the pin too (the
  fallback priced);
* from the cut request through the replacing one, the proxied bill exceeds
  the direct one by no more than what was priced (the bets' ``extra_usd``,
  the fallback included); the session as a whole by no more than all its bets.
"""

from __future__ import annotations

import os
import random
import tempfile
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from scalpel_desktop.accounting.cache_model import PromptCache
from scalpel_desktop.surgery.budget import RiskBudget
from scalpel_desktop.surgery.validate import pin_problems
from scalpel_desktop.wire.jsoncodec import loads

from tests.invariants.agent_sessions import TTL_S, Session, _Builder, _Conversation, _text
from tests.invariants.harness import VARIANTS, Arm, Pipeline
from tests.invariants.test_cost import RANDOM, validity_problems
from tests.invariants.test_variants import blocks_before

IN_CI = os.environ.get("CI", "").lower() == "true"
EXAMPLES = int(os.environ.get("SCALPEL_VARIANT_EXAMPLES", "10" if IN_CI else "3"))
PROFILE = settings(max_examples=EXAMPLES, deadline=None, derandomize=not RANDOM,
                   suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
MODEL = "claude-opus-4-5"
CONFIG = {"policy": "death", "tier": 2, "risk_cap_pct": 1000}
BIG = "/home/user/proj/src/big.py"


def old_client(body: dict) -> dict:
    """``body`` as Claude Code before 2.1 sends it: the message before the last marked too."""
    msgs = list(body["messages"])
    if len(msgs) < 2:
        return body
    cc = msgs[-1]["content"][-1]["cache_control"]
    prev = dict(msgs[-2])
    content = prev.get("content")
    if isinstance(content, list) and content and content[-1].get("type") in ("text", "tool_result", "tool_use"):
        prev["content"] = list(content[:-1]) + [dict(content[-1], cache_control=dict(cc))]
        msgs[-2] = prev
    return dict(body, messages=msgs)


def moved_session(seed: int, ttl: str, before: int, between: int, rewind: int | None, gap_d: float,
                  after: int) -> Session:
    """``before`` small turns, a big read, ``between`` small turns, the same read again: the first
    dies in the next request (role ``cut``). ``rewind`` 0: the request after it replaces its last
    message (role ``rewrite``), ``gap_d`` seconds after it; 1: one more turn first; None: no rewrite."""
    rnd = random.Random(seed)
    b = _Builder(rnd, ttl)
    b.files[BIG] = _text(rnd, rnd.randrange(60_000, 120_000))
    main = _Conversation(b, "", "Fix the failing tests in src/ and explain. " + _text(rnd, 400))

    def small(tag: str) -> None:
        b.turn(main, [("bash", f"/home/user/proj/{tag}")])
        b.gap()
        b.send(main, MODEL, "main")

    b.send(main, MODEL, "main")
    for t in range(before):
        small(f"a{t}")
    b.turn(main, [("read", BIG)])
    b.gap()
    b.send(main, MODEL, "main")
    for t in range(between):
        small(f"b{t}")
    # (parallel calls: the older read dies among more than ``keep_recent`` newer results)
    b.turn(main, [("read", BIG), ("bash", "/home/user/proj/x"), ("bash", "/home/user/proj/y")])
    b.gap()
    b.send(main, MODEL, "cut")
    cut_msgs = list(main.messages)
    if rewind is not None:
        if rewind == 1:
            small("c")
        b.t += gap_d
        main.messages = cut_msgs[:-1] + [{"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": r["tool_use_id"], "content": "[Request interrupted by user]"}
            for r in cut_msgs[-1]["content"]] + [{"type": "text", "text": "Stop. " + _text(rnd, rnd.randrange(50, 600))}]}]
        b.send(main, MODEL, "rewrite")
    for t in range(after):
        small(f"d{t}")
    for r in b.out.requests:
        r.body = old_client(r.body)
    return b.out


class CostArm(Arm):
    """harness.Arm that also keeps each request's cost."""

    def __init__(self, cache):
        super().__init__(cache)
        self.bills_cost: list[float] = []

    def bill(self, req, body):
        before = self.cost
        got = super().bill(req, body)
        self.bills_cost.append(self.cost - before)
        return got


def run(session: Session, root: Path, variant: str):
    pipe = Pipeline(CONFIG, root)
    pipe.stage.economist.budget = RiskBudget(saved_usd=1000.0)
    direct, proxied = CostArm(PromptCache.variant(variant)), CostArm(PromptCache.variant(variant))
    exchanges, sent = [], []
    for req in session.requests:
        direct.bill(req, req.body)
        ex = pipe.process(req)
        body = loads(ex.body_to_send())
        pipe.complete(ex, req, proxied.bill(req, body).usage)
        exchanges.append(ex)
        sent.append(body)
    return direct, proxied, exchanges, sent


def figures(ex) -> dict:
    d = ex.decision
    return d.figures if d is not None and "cut" in d.changes else {}


def moved_back(body: dict, pin: int, moved: int) -> dict:
    """``body`` with the pin's marker put back on message ``moved`` (what the client sent there)."""
    msgs = list(body["messages"])
    pm = dict(msgs[pin])
    pm["content"] = list(pm["content"])
    last = dict(pm["content"][-1])
    marker = last.pop("cache_control")
    pm["content"][-1] = last
    mm = dict(msgs[moved])
    mm["content"] = list(mm["content"][:-1]) + [dict(mm["content"][-1], cache_control=marker)]
    msgs[pin], msgs[moved] = pm, mm
    return dict(body, messages=msgs)


def problems_of(session: Session, direct, proxied, exchanges, sent, spill: Path) -> tuple[list[str], int]:
    """(what breaks the invariants, how many moved-marker cuts there were)."""
    problems, moves = [], 0
    bare = list(sent)
    staked = 0.0
    for i, ex in enumerate(exchanges):
        f = figures(ex)
        staked += max(0.0, float(f.get("extra_usd") or 0.0))
        if f.get("moved_from") is None:
            continue
        moves += 1
        pin, moved = f["pin_unit"], f["moved_from"]
        body = sent[i]
        assert moved == len(body["messages"]) - 2
        if "cache_control" in body["messages"][moved]["content"][-1]:
            problems.append(f"request {i}: the marker on messages[{moved}] was not moved")
        bare[i] = moved_back(body, pin, moved)
        problems += [f"request {i}: {p}" for p in pin_problems(bare[i], body, pin)]
        floor = blocks_before(body, pin + 1) - 1
        if proxied.bills[i].read_at < floor:
            problems.append(f"request {i}: read up to block {proxied.bills[i].read_at}, before the pin {floor}")
        j = next((k for k in range(i + 1, len(session.requests)) if session.requests[k].role == "rewrite"), None)
        last = j if j is not None else i
        if j is not None and session.requests[j].at < session.requests[i].at + TTL_S[session.ttl]:
            if proxied.bills[j].read_at < floor:
                problems.append(f"request {j} (replaces {i}'s last message): read up to block "
                                f"{proxied.bills[j].read_at}, before the pin {floor}")
        priced = sum(max(0.0, float(figures(exchanges[k]).get("extra_usd") or 0.0)) for k in range(i, last + 1))
        over = sum(proxied.bills_cost[k] - direct.bills_cost[k] for k in range(i, last + 1))
        if over > priced + 1e-9:
            problems.append(f"requests {i}..{last}: ${over:.6f} dearer than direct, ${priced:.6f} priced")
    if proxied.cost > direct.cost + staked + 1e-9:
        problems.append(f"session ${proxied.cost - direct.cost:.6f} dearer, ${staked:.6f} staked")

    problems += validity_problems(session, SimpleNamespace(sent=bare), spill)
    return problems, moves


@pytest.mark.parametrize("variant", VARIANTS)
def test_a_moved_marker_cut_is_never_dearer_than_priced(variant):
    @PROFILE
    @given(seed=st.integers(0, 2**32 - 1), ttl=st.sampled_from(["5m", "1h"]), before=st.integers(10, 16),
           between=st.integers(0, 3), rewind=st.sampled_from([0, 0, 1, None]),
           gap=st.sampled_from([0.0, 0.01, 0.5, 0.9, 1.2]), after=st.integers(0, 6))
    def check(seed, ttl, before, between, rewind, gap, after):
        # (more than a turn between the reads: the pin out of the moved marker's reach, no move;
        # the rewrite from at once to past the TTL)
        session = moved_session(seed, ttl, before, between, rewind, 1.0 + gap * TTL_S[ttl], after)
        with tempfile.TemporaryDirectory() as tmp:
            got = run(session, Path(tmp), variant)
            problems, _ = problems_of(session, *got, Path(tmp) / "spill")
            assert problems == []

    check()


def test_the_generated_sessions_really_move_the_marker():
    """Not vacuous: the cut at death is made, pinned by the moved marker, and its bet includes the
    fallback; a rewrite of its last message follows (a validator refusing every move fails here)."""
    moves = 0
    for seed in range(3):
        session = moved_session(seed, "5m", 12, seed % 2, 0, 5.0, 3)
        with tempfile.TemporaryDirectory() as tmp:
            got = run(session, Path(tmp), "lookback=12,refresh=read")
            problems, n = problems_of(session, *got, Path(tmp) / "spill")
            assert problems == []
            moves += n
            for ex in got[2]:
                f = figures(ex)
                if f.get("moved_from") is not None:
                    assert f["boundary"] == "pinned" and f["fallback_usd"] > 0
    assert moves >= 2
