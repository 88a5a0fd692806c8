"""A USER'S HISTORY, ITS BETS FUNDED BY ITS OWN SAVINGS: NEVER DEARER IN TOTAL, NO ONE SESSION PAST THE CAP.

Issue 23's property, under every reading of what the API leaves undocumented
(``PromptCache.variant``): a user runs several generated sessions one after
another through ONE proxy (one economist, one risk budget, as the ledger
carries it across conversations). The first sessions' free cuts bank what
they surely saved; the warm policies' later bets draw on it. Billed directly
and through the pipeline by the emulator's cache model:

* the history in total is never dearer;
* no one session is dearer than the cap (``risk_cap_pct`` of what it cost);
* the budget never goes below zero, after any request.

Not vacuous: ``test_the_histories_really_bet`` shows warm cuts funded this way.
"""

from __future__ import annotations

import os
import random
import tempfile
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from scalpel_desktop.accounting.cache_model import PromptCache
from scalpel_desktop.wire.jsoncodec import loads
from tests.invariants.agent_sessions import generate
from tests.invariants.harness import VARIANTS, Arm, Pipeline
from tests.invariants.test_cost import RANDOM

IN_CI = os.environ.get("CI", "").lower() == "true"
EXAMPLES = int(os.environ.get("SCALPEL_HISTORY_EXAMPLES", "4" if IN_CI else "2"))
PROFILE = settings(max_examples=EXAMPLES, deadline=None, derandomize=not RANDOM,
                   suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
CAP_PCT = 1.0
APART_S = 200_000.0  # between two sessions' starts: every cache of the one before has expired


def run_history(seed: int, sessions: int, policy: str, variant: str, root: Path) -> dict:
    """The sessions of one user in turn through one pipeline; each session's two bills, the
    lowest balance the budget reached and the warm cuts made."""
    pipe = Pipeline({"policy": policy, "tier": 2, "risk_cap_pct": CAP_PCT}, root)
    direct, proxied = Arm(PromptCache.variant(variant)), Arm(PromptCache.variant(variant))
    costs, lowest, warm = [], 0.0, 0
    for k in range(sessions):
        session = generate(random.Random(seed * 31 + k))
        shift = k * APART_S
        d0, p0 = direct.cost, proxied.cost
        for req in session.requests:
            req = replace(req, at=req.at + shift, end=req.end + shift)
            direct.bill(req, req.body)
            ex = pipe.process(req)
            bill = proxied.bill(req, loads(ex.body_to_send()))
            pipe.complete(ex, req, bill.usage)
            lowest = min(lowest, pipe.stage.economist.budget.balance_usd)
            if ex.surgery is not None and ex.surgery.staked_usd > 0:
                warm += 1
        costs.append((direct.cost - d0, proxied.cost - p0))
    return {"costs": costs, "lowest": lowest, "warm": warm, "budget": pipe.stage.economist.budget}


def history_problems(got: dict) -> list[str]:
    problems = []
    direct = sum(d for d, _ in got["costs"])
    proxied = sum(p for _, p in got["costs"])
    if proxied > direct + 1e-9:
        problems.append(f"the history is dearer: {proxied:.6f} > {direct:.6f}")
    for i, (d, p) in enumerate(got["costs"]):
        if p - d > CAP_PCT / 100.0 * p + 1e-9:
            problems.append(f"session {i} dearer than the cap: +{p - d:.6f} on {p:.6f}")
    if got["lowest"] < -1e-12:
        problems.append(f"the budget went below zero: {got['lowest']:.6f}")
    return problems


@pytest.mark.parametrize("policy", ["death", "payback"])
def test_a_funded_history_is_never_dearer_under_every_reading(policy):
    @PROFILE
    @given(seed=st.integers(0, 2**32 - 1), variant=st.sampled_from(VARIANTS))
    def check(seed, variant):
        with tempfile.TemporaryDirectory() as tmp:
            assert history_problems(run_history(seed, 3, policy, variant, Path(tmp))) == []

    check()


def test_the_histories_really_bet():
    """Over a few histories the warm policies bet on what the earlier sessions saved (a budget
    that refused every bet, or a harness that never funded one, would fail here)."""
    warm, saved = 0, 0.0
    for seed in range(3):
        with tempfile.TemporaryDirectory() as tmp:
            got = run_history(seed, 3, "payback", VARIANTS[0], Path(tmp))
        assert history_problems(got) == []
        warm += got["warm"]
        saved += got["budget"].saved_usd
    assert saved > 0 and warm > 0, (saved, warm)
