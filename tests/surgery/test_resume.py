"""The morning resume (issue 26 step 1): a first sighting after a restart, at the ledger's break.

An economist that saw a conversation gives its next request, past the TTL,
the ``ttl-expired`` break; a new economist (a restarted proxy) given the
resume point the first one recorded must give the same break, certain only
when the proxy was the only way out and the ledger is whole, else a guess
priced as a bet from the user's risk budget.
"""

from __future__ import annotations

import pytest

from scalpel_desktop.store.resume_points import ResumePoint, Standing
from scalpel_desktop.surgery.budget import RiskBudget
from scalpel_desktop.surgery.plan import Candidate
from scalpel_desktop.surgery.resume import Resumes, resume_digest
from tests.surgery.economist_shapes import HAIKU, KEY, OPUS, econ, shape

TTL = 300.0


def _units(n, prefix="u"):
    return [f"{prefix}{i:015d}".encode()[:16] for i in range(n)]


def _before_restart(n=40, at=0.0, answered_after=2.0):
    """A running proxy's economist, one request sent and answered; the resume point it hands the ledger."""
    e = econ()
    s = shape(_units(n), at=at, ttl="5m")
    serial = e.record_sent(s)
    fields = e.record_finished(KEY, OPUS, serial, at + answered_after, cache_read=0, cache_written=20_000)
    assert fields is not None
    units, digest, ttl = fields
    return e, ResumePoint(at, at + answered_after, units, digest, ttl)


def _restarted(point, route_since=-1.0, clean_stop_at=10.0, others=None, standing=None, **settings):
    e = econ(**settings)
    e.resumes = Resumes({KEY: {OPUS: point, **(others or {})}}, {KEY: standing} if standing else {},
                        clean_stop_at, lambda: route_since)
    return e


def test_the_point_is_what_the_running_proxy_knew_and_the_break_is_the_same():
    running, point = _before_restart()
    assert point.units == 39 and point.ttl_s == TTL  # every message but the last (the client may rewrite it)
    later = shape(_units(42), at=2.0 + TTL + 31, ttl="5m")
    assert running.natural_break(later).reason == "ttl-expired"
    restarted = _restarted(point)
    brk = restarted.natural_break(later)
    assert (brk.index, brk.reason, brk.guess) == (0, "ttl-expired", False)
    assert restarted.natural_break(later) == brk  # pure: asking again changes nothing


def test_not_past_the_ttl_and_its_margin_is_warm_until_known():
    _, point = _before_restart()
    e = _restarted(point)
    at_margin = shape(_units(42), at=2.0 + TTL + 30, ttl="5m")
    assert e.natural_break(at_margin).reason == "first-seen"
    assert not e.resumes.may_apply(KEY, 2.0 + TTL - 1) and e.resumes.may_apply(KEY, 2.0 + TTL + 1)


@pytest.mark.parametrize("change", ["message", "system", "tools", "settings", "shorter"])
def test_another_history_than_the_one_sent_is_warm_until_known(change):
    _, point = _before_restart()
    e = _restarted(point)
    hashes = _units(42)
    kw = {}
    if change == "message":
        hashes[5] = b"x" * 16
    elif change == "shorter":
        hashes = hashes[:39]
    else:
        kw[change] = "changed"
    assert e.natural_break(shape(hashes, at=1000.0, ttl="5m", **kw)).reason == "first-seen"


def test_another_model_that_may_be_live_keeps_it_warm():
    _, point = _before_restart()
    haiku = ResumePoint(900.0, 901.0, 3, "d" * 32, TTL)  # answered 99 s before the resume
    e = _restarted(point, others={HAIKU: haiku})
    assert e.natural_break(shape(_units(42), at=1000.0, ttl="5m")).reason == "first-seen"
    e = _restarted(point, others={HAIKU: ResumePoint(1.0, 2.0, 3, "d" * 32, TTL)})
    assert e.natural_break(shape(_units(42), at=1000.0, ttl="5m")).reason == "ttl-expired"


@pytest.mark.parametrize("route_since, clean_stop_at", [
    (None, 10.0),  # autopilot off: Claude Code may have gone straight to the API
    (5.0, 10.0),  # autopilot turned on after the request: before it, it may have
    (-1.0, None),  # the previous proxy did not stop cleanly: a later request's row may be lost
    (-1.0, 1.0),  # ... or its clean stop is older than the request
])
def test_without_both_facts_the_break_is_a_guess(route_since, clean_stop_at):
    _, point = _before_restart()
    e = _restarted(point, route_since=route_since, clean_stop_at=clean_stop_at)
    brk = e.natural_break(shape(_units(42), at=1000.0, ttl="5m"))
    assert (brk.index, brk.reason, brk.guess) == (0, "ttl-expired", True)


def _dead(n=10, tokens=5000):
    return [Candidate(f"t{i}", 5 + i, tokens, 10, "superseded") for i in range(n)]


def test_a_guess_is_a_bet_the_budget_must_cover():
    _, point = _before_restart()
    later = shape(_units(42), at=1000.0, ttl="5m", unit_tokens=[2000] * 42, total=100_000)
    e = _restarted(point, route_since=None)
    plan = e.decide(later, _dead())
    assert not plan.cut_ids and "guess, not bet: budget" in plan.reason  # a fresh install saved nothing

    # The user's savings cover it, and the conversation's past (the ledger's) gives its cap room.
    standing = Standing(turns=30, banked_usd=0.0, staked_usd=0.0, usage={OPUS: (1000, 50_000, 0, 2_000_000, 9000)})
    e = _restarted(point, route_since=None, standing=standing, risk_cap_pct=100)
    e.budget = RiskBudget(saved_usd=10.0)
    plan = e.decide(later, _dead())
    assert plan.cut_ids and plan.natural_break.guess
    rates = e.prices.rates(OPUS)
    region = 2000 * (42 - 5)  # everything from the first cut on, re-written were the cache live after all
    cut = sum(c.saving for c in _dead())  # (each stub's own tokens stay)
    assert plan.risk_usd == pytest.approx((region - cut) * rates.write_5m - region * rates.cache_read)
    assert "staked on it" in plan.reason

    # The same under a cap of 1% of what the conversation cost so far: refused.
    e = _restarted(point, route_since=None, standing=standing, risk_cap_pct=1)
    e.budget = RiskBudget(saved_usd=10.0)
    plan = e.decide(later, _dead())
    assert not plan.cut_ids and "guess, not bet: cap" in plan.reason


def test_a_certain_break_cuts_free_and_the_first_request_uses_the_point_up():
    _, point = _before_restart()
    standing = Standing(turns=30, banked_usd=0.25, staked_usd=0.05, usage={OPUS: (0, 1000, 0, 0, 0)})
    e = _restarted(point, standing=standing)
    later = shape(_units(42), at=1000.0, ttl="5m")
    plan = e.decide(later, _dead())
    assert plan.cut_ids and plan.risk_usd == 0 and "ttl-expired" in plan.reason
    e.record_sent(later, brk=plan.natural_break)
    conv = e.conversations[KEY]
    assert (conv.turns, conv.banked_usd, conv.staked_usd) == (31, 0.25, 0.05)
    assert conv.cost_usd == pytest.approx(1000 * e.prices.rates(OPUS).write_5m)
    assert KEY not in e.resumes.points and not e.resumes.may_apply(KEY, 2000.0)


def test_a_digest_is_made_of_the_proxys_own_hashes_only():
    assert resume_digest("S", "T", "X", [b"a" * 16], 1) != resume_digest("S", "T", "Y", [b"a" * 16], 1)
    assert resume_digest("S", "T", "X", [b"a" * 16, b"b" * 16], 1) == resume_digest("S", "T", "X", [b"a" * 16], 1)
    assert resume_digest("S", "T", "X", ["not bytes"], 1) is None  # (no point: warm until known)


from hypothesis import given, settings, strategies as st  # noqa: E402


@settings(max_examples=60, deadline=None)
@given(n=st.integers(2, 30), gap=st.floats(0, 4000), grow=st.integers(0, 5), rewrite=st.integers(-1, 29),
       ttl=st.sampled_from(["5m", "1h"]))
def test_a_restart_never_finds_a_break_the_running_proxy_would_not(n, gap, grow, rewrite, ttl):
    """Whatever the history and the pause: the restarted economist's break is the running one's
    (a cold cache), or warm until known; never a break where the running proxy saw a live cache."""
    running = econ()
    first = shape(_units(n), at=0.0, ttl=ttl)
    serial = running.record_sent(first)
    units, digest, ttl_s = running.record_finished(KEY, OPUS, serial, 2.0, cache_read=0, cache_written=9000)
    restarted = _restarted(ResumePoint(0.0, 2.0, units, digest, ttl_s))
    hashes = _units(n + grow)
    if 0 <= rewrite < n - 1:
        hashes[rewrite] = b"r" * 16
    later = shape(hashes, at=2.0 + gap, ttl=ttl)
    want, got = running.natural_break(later), restarted.natural_break(later)
    assert got.reason in ("first-seen", "ttl-expired")
    if got.reason == "ttl-expired":
        assert (want.index, want.reason) == (0, "ttl-expired") and not got.guess
