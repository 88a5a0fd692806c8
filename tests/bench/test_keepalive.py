"""The bench's keeper arm: the shipped keeper's decisions (surgery/keeper.py) on a transcript's pauses,
billed by the arm's own cache; and the as-5m TTL choice."""

from __future__ import annotations

import pytest

from scalpel_desktop.accounting.prices import PriceTable
from scalpel_desktop.bench.keepalive import build, pauses_before, waits_for_person
from scalpel_desktop.bench.ledger_view import ledger_facts
from scalpel_desktop.bench.reader import read_file
from scalpel_desktop.bench.replay import replay_sequence
from scalpel_desktop.bench.simulate import SequenceSimulator
from scalpel_desktop.bench.stage_driver import SequenceBodies
from scalpel_desktop.config import KEYS
from scalpel_desktop.surgery.budget import RiskBudget
from scalpel_desktop.surgery.keeper import Pauses, ski_rental_bound
from tests.bench.transcripts import Transcript, simple_session, text, tool_use, usage

PRICES = PriceTable.builtin()


def keeper_arm(seq, sim, returns=(), ended=0, budget_usd=100.0, cap_pct=100.0):
    """The keeper arm of ``seq`` funded with ``budget_usd``, for a user whose ledger holds these pauses."""
    cfg = {k: v.default for k, v in KEYS.items()}
    cfg["risk_cap_pct"] = cap_pct
    bodies = SequenceBodies(seq, cfg, 2)
    sim.two_message_marks = bodies.markers.previous_message
    return build("keepalive", seq, sim, bodies, PRICES, cfg, 2, None, None, RiskBudget(budget_usd),
                 Pauses.of(returns, ended))


def _run(seq, **kw):
    sim = SequenceSimulator(seq, PRICES)
    off = sim.arm()
    arm, driver = keeper_arm(seq, sim, **kw)
    try:
        for k in range(len(seq.requests)):
            off.step(k)
            arm.step(k)
        arm.finish()
    finally:
        driver.close()
    return off, arm, driver


def _session(tmp_path, gap=600.0):
    return read_file(simple_session(tmp_path / "s.jsonl", turns=8, gap_at=5, gap=gap)).sequences[0]


def test_a_pause_the_person_comes_back_from_is_kept_warm_and_the_rewrite_it_avoided_is_banked(tmp_path):
    seq = _session(tmp_path)
    off, arm, driver = _run(seq, returns=(600.0,) * 5)  # this user comes back after 10 minutes
    # two pings cover the 600 s pause (the first alone would lapse at about 567 s), then request 5 reads
    assert arm.bill.requests[5].sim.cache_read > off.bill.requests[5].sim.cache_read
    assert arm.bill.requests[5].sim.cache_read >= seq.requests[4].usage.prompt_tokens * 0.99
    assert arm.kept == 1 and arm.saved_usd > 0
    conv = next(iter(driver.stage.economist.conversations.values()))
    assert conv.banked_usd >= arm.saved_usd and conv.staked_usd == pytest.approx(arm.bill.extra_cost)
    during = arm.pings_sent
    assert during >= 2 and arm.bill.extra_requests == arm.pings_sent
    # the pause cost less kept than cold: the pings and the read against the re-write
    kept = sum(r.sim_cost for r in arm.bill.requests[:6]) + arm.bill.extra_cost
    assert kept < sum(r.sim_cost for r in off.bill.requests[:6])


def _one_pause(tmp_path):
    """Nothing ever dies in it (one read): no cut banks anything; one 10-minute pause."""
    tr = Transcript()
    tr.user("hi")
    tr.response([text("a"), tool_use("toolu_0")], usage(w5=15_000))
    tr.result("toolu_0", "x" * 3000, dt=600.0)
    tr.response([text("b"), tool_use("toolu_1")], usage(w5=16_000))
    return read_file(tr.write(tmp_path / "p.jsonl")).sequences[0]


def test_no_budget_no_ping_and_the_cap_holds(tmp_path):
    seq = _one_pause(tmp_path)
    _off, funded, _d = _run(seq, returns=(600.0,) * 5)
    assert funded.pings_sent > 0  # (the same pause, funded: pinged)
    for kw in ({"budget_usd": 0.0}, {"cap_pct": 0.0}):
        _off, arm, driver = _run(seq, returns=(600.0,) * 5, **kw)
        assert arm.pings_sent == 0 and arm.bill.extra_cost == 0
    # where cuts bank as it goes, the pings never stake more than was banked, nor past a conversation's cap
    _off, arm, driver = _run(_session(tmp_path), returns=(600.0,) * 5, budget_usd=0.0, cap_pct=1.0)
    eco = driver.stage.economist
    conv = next(iter(eco.conversations.values()))
    assert eco.budget.staked_usd <= eco.budget.saved_usd + 1e-12
    assert conv.staked_usd <= conv.banked_usd + 0.01 * conv.cost_usd + 1e-12


def test_a_user_who_does_not_come_back_gets_no_ping(tmp_path):
    seq = _session(tmp_path)
    _off, arm, _d = _run(seq, returns=(1.0, 2.0, 3.0), ended=20)
    assert arm.pings_sent == 0


def test_after_the_last_answer_the_pings_stop_at_the_ski_rental_bound(tmp_path):
    from scalpel_desktop.surgery import keeper_link as link

    seq = _session(tmp_path, gap=2.0)  # no pause inside: only the one after the last answer
    last = seq.requests[-1]
    _off, probe, driver = _run(seq)  # (no pauses in the ledger: no ping; the plan's bound all the same)
    eco = driver.stage.economist
    figures = probe._figures.get(len(seq.requests) - 1)  # (its decision's: the dead tokens a cold break frees)
    plan = link.pause_plan(eco, next(iter(eco.conversations)), last.model, probe.bill.requests[-1].sim, figures,
                           sent_at=last.ts, ended_at=last.ts_done, first_byte_s=0.0, pauses=Pauses())
    assert probe.pings_sent == 0 and plan.bound > 2
    # every past pause came back inside the bound's last ping's cover: the rule would go all the way
    back = plan.bound * plan.step_s - (last.ts_done - last.ts) + 300.0 - 5.0
    _off, arm, _d = _run(seq, returns=(back,) * 50)
    assert arm.pings_sent == plan.bound == ski_rental_bound(plan.quote)  # and not one more: nobody came back
    assert arm.bill.extra_cost <= plan.quote.avoided_usd * 1.01  # rent never paid past the price of buying


def test_the_pauses_are_those_of_the_main_sequences_that_ended_before(tmp_path):
    a = read_file(simple_session(tmp_path / "a.jsonl", turns=4, gap_at=2, gap=700.0)).sequences[0]
    tr = Transcript(session="99999999-2222-4333-8444-555555555555")
    tr.t = a.requests[-1].ts_done + 5000
    tr.user("hi")
    tr.response([text("a"), tool_use("toolu_0")], usage(w5=15_000))
    tr.result("toolu_0", "x" * 3000, dt=5.0)
    tr.response([text("b")], usage(read=15_000, w5=1_000))
    b = read_file(tr.write(tmp_path / "b.jsonl")).sequences[0]
    seqs = [a, b]
    got = pauses_before(seqs, b, ledger_facts(seqs))
    assert got.ended == 1 and 700.0 in [round(g) for g in got.returned] and len(got.returned) == 3
    assert pauses_before(seqs, a, ledger_facts(seqs)) == Pauses()


def test_the_keeper_arm_is_reported_with_its_pings(tmp_path):
    seq = _session(tmp_path)
    res = replay_sequence(seq, PRICES, policies=["off", "death", "keepalive"], ceiling=False,
                          budgets={"keepalive": RiskBudget(100.0)}, config={"risk_cap_pct": 100.0},
                          pauses=Pauses.of((600.0,) * 5))
    assert not res.errors
    got = res.keeper["keepalive"]
    assert got["pings"] == res.cuts["keepalive"] > 0 and got["kept"] == 1
    assert res.cost("keepalive") < res.cost("death")  # the kept pause beats the cold break here
    assert res.budget["keepalive"][1] == pytest.approx(got["ping_cost_usd"])  # the pings' stakes flow on


def test_waits_for_person_reads_the_answers_last_block(tmp_path):
    seq = _session(tmp_path)
    assert all(waits_for_person(r) for r in seq.requests)  # each answer ends in a tool call


def test_as_5m_writes_cheaper_but_loses_the_long_pauses(tmp_path):
    tr = Transcript()
    tr.user("hi")
    tr.response([text("a"), tool_use("toolu_0")], usage(w1=15_000))
    tr.result("toolu_0", "x" * 3000, dt=1000.0)  # 1000 s: alive at 1h, expired at 5m
    tr.response([text("b"), tool_use("toolu_1")], usage(read=15_000, w1=1_000))
    seq = read_file(tr.write(tmp_path / "h.jsonl")).sequences[0]
    res = replay_sequence(seq, PRICES, policies=["off", "as-5m"], ceiling=False)
    assert res.cost("as-5m") > res.real_cost  # the 5m entry expired in the pause: a full rewrite
