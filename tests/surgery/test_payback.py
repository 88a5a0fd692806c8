"""surgery/payback.py through the economist: pins, the worst case, the risk budget, cut at death."""

from __future__ import annotations

import pytest

from scalpel_desktop.accounting.prices import PriceTable
from scalpel_desktop.surgery.plan import Candidate, RequestShape
from tests.surgery.economist_shapes import KEY, OPUS, econ, shape, sent, units


def _warm_session(e, turns, n_units=40, step=10.0, banked=1.0):
    """``turns`` requests, each 2 units longer, the last one ``n_units`` long; their replayed
    stubs surely saved ``banked`` dollars in all (the warm policies' risk budget)."""
    for t in range(turns):
        sent(e, shape(units(n_units - 2 * (turns - 1 - t)), at=t * step, ttl="5m"),
             saved_usd=banked / turns)


def _warm(n=42, at=100.0, tokens=1000, pinnable=True, free=1, **kw):
    s = shape(units(n), at=at, unit_tokens=[tokens] * n, **kw)
    return RequestShape(**{**s.__dict__, "unit_pinnable": [pinnable] * n, "free_markers": free})


def test_payback_pins_the_newest_live_entry_before_the_cut():
    e = econ(policy="payback")
    r = PriceTable.builtin().rates(OPUS)
    _warm_session(e, 10)  # entries end at units 22, 24, ..., 40, sent at 0, 10, ..., 90
    plan = e.decide(_warm(), [Candidate("big", 35, 5000, 20)])
    # The entry ending at unit 34 (message 33's last block) is pinned: the read stops
    # there under any lookback; units 34..39 are re-written, 6,000 tokens.
    saving = 5000 - 20
    extra = (6000 - saving) * r.write_5m - 6000 * r.cache_read
    turns = plan.figures["turns_est"]
    assert plan.action == "cut" and plan.cut_ids == ["big"]
    assert plan.pin_unit == 33 and plan.pin_ttl == "5m"
    assert plan.figures["boundary"] == "pinned" and plan.figures["read_stops_at"] == 34
    assert plan.rewrite_tokens == 6000
    assert plan.figures["extra_usd"] == pytest.approx(extra, rel=1e-6)
    assert plan.figures["payback_usd"] == pytest.approx(saving * r.cache_read * turns, rel=1e-6)
    assert saving * r.cache_read * turns >= 2 * extra


def test_the_pin_ignores_block_counts_a_deep_history_costs_the_same():
    # the old rule priced this by counting blocks against a lookback of 20: with 3 blocks
    # per message the entry at 34 was "out of reach" - a count nobody documents
    e = econ(policy="payback")
    _warm_session(e, 10)
    assert not any("block" in name for name in RequestShape.__dataclass_fields__)  # not even known
    plan = e.decide(_warm(), [Candidate("big", 35, 5000, 20)])
    assert plan.action == "cut" and plan.pin_unit == 33 and plan.rewrite_tokens == 6000


def test_without_a_free_marker_the_rewrite_is_priced_at_its_worst_case():
    e = econ(policy="payback")
    _warm_session(e, 10)
    for s in (_warm(free=0), _warm(pinnable=False)):
        plan = e.decide(s, [Candidate("big", 35, 5000, 20)])
        assert plan.action == "unchanged"  # nothing surely read: the whole prompt re-written


def test_worst_case_figures_when_a_huge_saving_repays_even_that():
    e = econ(policy="payback", batch_min_tokens=0)
    _warm_session(e, 30, n_units=100, step=5.0)
    s = _warm(n=102, at=200.0, tokens=100, free=0, total=20_000)
    plan = e.decide(s, [Candidate("huge", 95, 60_000, 20)])
    if plan.action == "cut":
        assert plan.figures["boundary"] == "worst-case" and plan.pin_unit is None
        assert plan.figures["read_stops_at"] == -1  # nothing surely read, not even the system prompt
        assert plan.rewrite_tokens == 20_000 - 200  # everything up to the break, tools and system included


def test_an_entry_past_its_ttl_since_it_was_sent_is_not_pinned():
    # refreshes are not relied on: the entry ending at 34 was sent at t=60; at t=60+300-30 it
    # may be gone (if only the entry read is refreshed), so an older... nothing older lives either
    e = econ(policy="payback")
    _warm_session(e, 10)
    late = _warm(at=60 + 300 - 29)
    plan = e.decide(late, [Candidate("big", 35, 5000, 20)])
    assert plan.figures.get("read_stops_at") != 34
    early = _warm(at=60 + 300 - 31)
    assert e.decide(early, [Candidate("big", 35, 5000, 20)]).figures.get("read_stops_at") == 34


def test_an_unconfirmed_entry_is_not_pinned():
    e = econ(policy="payback")
    for t in range(10):
        s = shape(units(22 + 2 * t), at=t * 10.0)
        e.record_sent(s)  # no response came back: maybe nothing was written
    plan = e.decide(_warm(), [Candidate("big", 35, 5000, 20)])
    assert plan.action == "unchanged"


def test_an_entry_of_another_prefix_is_not_pinned():
    e = econ(policy="payback")
    _warm_session(e, 10)
    other = _warm(system="S2")  # the system changed: break 0, cuts are free anyway
    assert e.decide(other, [Candidate("big", 35, 5000, 20)]).rewrite_tokens == 0
    changed = list(units(42))
    changed[3] = "rewritten"
    s = _warm()
    s = RequestShape(**{**s.__dict__, "unit_hashes": tuple(changed), "rewrite_at": None})
    plan = e.decide(s, [Candidate("big", 35, 5000, 20)])
    assert plan.figures.get("boundary") != "pinned" or plan.figures["read_stops_at"] <= 3


def _counted_session(e, turns=10):
    """Like ``_warm_session`` with the usage's cache counts: request t (units 22 + 2t) cached
    1,000 tokens per unit, so the entry ending at unit u holds u x 1,000 tokens."""
    for t in range(turns):
        s = shape(units(22 + 2 * t), at=t * 10.0)
        serial = e.record_sent(s)
        e.record_finished(KEY, OPUS, serial, s.at + 2, cache_read=1000 * (20 + 2 * t), cache_written=2000,
                          saved_usd=0.1)


@pytest.mark.parametrize("read,refreshed", [(34_000, True), (36_000, False), (0, False)])
def test_a_pinned_request_refreshes_its_pin_entry_only_when_the_read_stops_there(read, refreshed):
    # Under "a hit refreshes only the entry read", a pin whose request read further (an entry
    # between the pin and the cut) was not refreshed: its life still runs from its own write.
    e = econ(policy="payback")
    _counted_session(e)
    s = _warm()
    plan = e.decide(s, [Candidate("big", 35, 5000, 20)])
    assert plan.pin_unit == 33
    serial = e.record_sent(s, brk=plan.natural_break, pin_unit=plan.pin_unit, risk_usd=plan.risk_usd)
    e.record_finished(KEY, OPUS, serial, 102.0, cache_read=read, cache_written=8000)
    marks = {m.units: m for m in e.conversations[KEY].entries[OPUS] if m.serial == serial}
    assert sorted(marks) == [34, 42] and all(m.at == 100.0 for m in marks.values())
    assert marks[34].confirmed is refreshed
    assert marks[42].confirmed and marks[42].cached == read + 8000  # its own entry: written, counted


def test_an_entry_is_surely_written_only_when_the_usage_cached_something():
    e = econ(policy="payback")
    for t in range(10):
        s = shape(units(22 + 2 * t), at=t * 10.0)
        serial = e.record_sent(s)
        # nothing cached: the prompt was under the model's minimum, no entry was written
        e.record_finished(KEY, OPUS, serial, s.at + 2, cache_read=0, cache_written=0, saved_usd=0.1)
    plan = e.decide(_warm(), [Candidate("big", 35, 5000, 20)])
    assert plan.figures.get("boundary") != "pinned"


def test_a_warm_cut_risks_no_more_than_the_conversation_has_surely_saved():
    # If the conversation ended right after the cut (a compaction replaces its history, the
    # session ends), the cut's priced re-write is lost: it must be covered by what this
    # conversation's cuts already saved, so the conversation is never dearer than without scalpel.
    r = PriceTable.builtin().rates(OPUS)
    extra = (6000 - 4980) * r.write_5m - 6000 * r.cache_read
    assert extra > 0
    for banked, cut in ((0.0, False), (extra * 0.99, False), (extra * 1.01, True)):
        e = econ(policy="payback")
        _warm_session(e, 10, banked=banked)
        plan = e.decide(_warm(), [Candidate("big", 35, 5000, 20)])
        assert (plan.action == "cut") is cut, banked
        if cut:
            assert plan.risk_usd == pytest.approx(extra) and plan.figures["budget_usd"] == pytest.approx(banked)
            e.record_sent(_warm(), brk=plan.natural_break, pin_unit=plan.pin_unit, risk_usd=plan.risk_usd)
            conv = e.conversations[KEY]
            assert conv.banked_usd == pytest.approx(banked) and conv.staked_usd == pytest.approx(extra)
            assert e.budget.balance_usd == pytest.approx(banked - extra)


def test_the_users_savings_fund_a_bet_in_another_conversation_within_its_cap():
    # The budget is the user's: what other conversations saved pays for this one's bet, but no one
    # conversation may stake more than its own savings plus risk_cap_pct of what it has cost so far.
    from scalpel_desktop.surgery.budget import RiskBudget

    r = PriceTable.builtin().rates(OPUS)
    extra = (6000 - 4980) * r.write_5m - 6000 * r.cache_read
    for saved_elsewhere, cost, cap, cut in ((0.0, 1000.0, 1.0, False),  # nothing saved: no bet
                                            (1.0, 0.0, 1.0, False),  # saved elsewhere, but no room here
                                            (1.0, extra * 100 * 0.99, 1.0, False),  # 1% of cost: just short
                                            (1.0, extra * 100 * 1.01, 1.0, True),
                                            (extra * 0.99, extra * 1000, 1.0, False)):  # the budget is short
        e = econ(policy="payback", risk_cap_pct=cap)
        e.budget = RiskBudget(saved_usd=saved_elsewhere)
        _warm_session(e, 10, banked=0.0)
        e.conversations[KEY].cost_usd = cost
        plan = e.decide(_warm(), [Candidate("big", 35, 5000, 20)])
        assert (plan.action == "cut") is cut, (saved_elsewhere, cost)
        if not cut:  # the row says which limit said no, not that nothing was dead
            limit = "budget" if saved_elsewhere < extra else "cap"
            assert plan.reason.startswith("warm: 4980 dead tokens from unit 35 not cut: " + limit), plan.reason
        if cut:
            e.record_sent(_warm(), brk=plan.natural_break, pin_unit=plan.pin_unit, risk_usd=plan.risk_usd)
            assert e.budget.staked_usd == pytest.approx(extra) and e.budget.balance_usd >= 0


def test_a_warm_cut_that_costs_nothing_now_needs_no_budget():
    e = econ(policy="payback")
    _warm_session(e, 10, banked=0.0)
    plan = e.decide(_warm(), [Candidate("big", 35, 5990, 20)])  # nearly all of the 6,000 re-written
    assert plan.action == "cut" and plan.risk_usd < 0


def test_a_warm_cut_never_reaches_into_another_live_models_prefix():
    # Sonnet's cache holds the same 40 units (a /model switch): a cut at 35 would make its next
    # request re-write from there, with no pin to make that certain.
    e = econ(policy="payback")
    _warm_session(e, 10)
    sent(e, shape(units(40), at=95.0, model="claude-sonnet-4-5"))
    s = _warm()
    assert e.natural_break(s).others_index == 40
    plan = e.decide(s, [Candidate("big", 35, 5000, 20)])
    assert plan.action == "unchanged"


def test_a_warm_cut_never_reaches_into_an_older_live_history():
    # The client diverged at unit 36 (an interruption) and came back; the x-history is still live, the
    # client may go back to it again (real sessions oscillate): a cut at 35 would cost it a re-write.
    e = econ(policy="payback")
    _warm_session(e, 9, n_units=38)
    sent(e, shape(units(36) + ["x36", "x37", "x38", "x39"], at=90.0))
    s = _warm(n=42)
    brk = e.natural_break(s)
    assert brk.others_index == 36 and brk.index == 38  # it extends the older one: the x-history is the other
    assert e.decide(s, [Candidate("big", 35, 5000, 20)]).action == "unchanged"
    assert e.decide(s, [Candidate("big", 36, 5000, 20)]).figures.get("boundary") in ("pinned", "worst-case", None)


def test_payback_refuses_a_deep_rewrite_for_a_small_saving():
    e = econ(policy="payback")
    _warm_session(e, 3)
    plan = e.decide(_warm(tokens=2000), [Candidate("deep", 1, 2500, 20)])
    assert plan.action == "unchanged"


def test_death_cuts_only_results_that_just_died():
    e = econ(policy="death")
    _warm_session(e, 10)
    first = e.decide(_warm(), [Candidate("old", 35, 5000, 20)])
    assert first.action == "cut"  # dead for the first time
    e2 = econ(policy="death")
    _warm_session(e2, 9)
    e2.decide(_warm(n=40, at=90.0), [Candidate("old", 35, 5000, 20)])  # seen dead (a decision at 90)...
    sent(e2, shape(units(40), at=90.0))
    again = e2.decide(_warm(), [Candidate("old", 35, 5000, 20)])
    assert again.action == "unchanged"  # ... so not new any more


def test_the_first_turns_earn_nothing_on_the_prior():
    e = econ(policy="payback")
    _warm_session(e, 1)
    plan = e.decide(_warm(at=20.0), [Candidate("big", 35, 5000, 20)])
    assert plan.action == "unchanged"  # one turn so far: the prior gives no later turn with q = 2/3


def test_payback_uses_the_cold_rule_when_the_break_makes_cuts_free():
    e = econ(policy="payback")
    _warm_session(e, 3)
    plan = e.decide(shape(units(42), at=10_000.0, unit_tokens=[1000] * 42), [Candidate("a", 5, 3000, 20)])
    assert plan.action == "cut" and plan.rewrite_tokens == 0 and plan.reason.startswith("free")


@pytest.mark.parametrize("policy", ["payback", "death"])
def test_a_conversation_never_seen_is_never_warm_cut_not_even_where_the_cut_beats_its_reads(policy):
    """SPEC 5: a conversation seen for the first time is warm until its cache state is known, and
    nothing is cut on a guess; so a first sighting goes out before anything parses it
    (pipeline/lane.py), whatever the user's history. Even a cut that would cost less than the
    reads it saves at once (nearly the whole prompt dead) waits: once the conversation is known,
    the same cut is made by the same arithmetic, its empty risk budget covering no more."""
    from scalpel_desktop.surgery.remaining import History

    r = PriceTable.builtin().rates(OPUS)
    e = econ(policy=policy, batch_min_tokens=1)
    e.history = History.of([500] * 20)
    s = _warm(n=42, tokens=1000, total=42 * 1000)
    assert e.natural_break(s).index == 41 and e.natural_break(s).reason == "first-seen"
    region = 41 * 1000  # all but the last message: nothing read, at worst
    enough = int(region * (1 - r.cache_read / r.write_5m)) + 30  # (the stub's 20 tokens come off the saving)
    plan = e.decide(s, [Candidate("big", 5, enough, 20)])
    assert plan.action == "unchanged" and not plan.cut_ids
    sent(e, s)  # its usage known: a conversation the economist holds state for, nothing banked
    later = _warm(n=43, at=30.0, tokens=1000, total=43 * 1000)
    plan = e.decide(later, [Candidate("big", 5, enough + 1000, 20)])
    assert plan.action == "cut" and plan.figures["boundary"] == "worst-case" and plan.risk_usd <= 0
    assert e.conversations[KEY].banked_usd == 0


def test_an_entry_the_provider_lost_is_no_longer_pinned():
    # A read that stops below an entry held as surely live says the provider lost it: a pin there
    # would re-write more than was priced (issue 23: +$0.70 on one real cut).
    def session(e, lose):
        cached = 0
        for t in range(10):
            s = shape(units(22 + 2 * t), at=t * 10.0, ttl="5m")
            serial = e.record_sent(s)
            read = 1000 if (lose and t == 9) else cached
            e.record_finished(KEY, OPUS, serial, s.at + 2, cache_read=read, cache_written=2000, saved_usd=0.1)
            cached = read + 2000
        return e

    kept = session(econ(policy="payback"), lose=False)
    assert kept.decide(_warm(), [Candidate("big", 35, 5000, 20)]).pin_unit == 33
    lost = session(econ(policy="payback"), lose=True)  # the last answer read only 1,000 tokens back
    marks = {m.units: m for m in lost.conversations[KEY].entries[OPUS]}
    assert not marks[34].confirmed and not marks[38].confirmed and marks[40].confirmed  # its own entry stands
    plan = lost.decide(_warm(), [Candidate("big", 35, 5000, 20)])
    assert plan.pin_unit != 33 and plan.figures.get("boundary") != "pinned"


def _old_client(n=42, blocks=1, moved_ttl_s=300.0, **kw):
    """``_warm`` sent by Claude Code before 2.1: no marker free, the one on message n-2 movable."""
    from scalpel_desktop.surgery.pin import Pinnable

    msgs = [{"role": "user", "content": [{"type": "text", "text": "x"}] * blocks} for _ in range(n)]
    s = _warm(n=n, free=0, **kw)
    return RequestShape(**{**s.__dict__, "unit_pinnable": Pinnable(msgs, n - 2, moved_ttl_s)})


def test_a_moved_marker_pins_and_prices_the_rewrite_its_last_message_would_cost():
    # Moved from message 40: this request writes no entry there. A request replacing its last
    # message (Esc) re-writes from the pin (34) to the end of message 40 instead of reading it,
    # 7,000 tokens less the cut, at the dearest write rate: added to the bet.
    e = econ(policy="payback")
    r = PriceTable.builtin().rates(OPUS)
    _warm_session(e, 14)
    plan = e.decide(_old_client(), [Candidate("big", 35, 5900, 20)])
    saving = 5900 - 20
    extra = (6000 - saving) * r.write_5m - 6000 * r.cache_read
    fallback = (7000 - saving) * (r.write_1h - r.cache_read)
    assert extra < 0 < extra + fallback  # the pin alone would gain now; its fallback makes it a bet
    assert plan.action == "cut" and plan.pin_unit == 33 and plan.figures["moved_from"] == 40
    assert plan.figures["boundary"] == "pinned" and plan.rewrite_tokens == 6000
    assert plan.figures["fallback_usd"] == pytest.approx(fallback, rel=1e-6)
    assert plan.risk_usd == pytest.approx(extra + fallback, rel=1e-6)
    assert plan.figures["extra_usd"] == pytest.approx(extra + fallback, rel=1e-6)
    assert plan.figures["payback_usd"] >= 2 * (extra + fallback)
    assert "marker moved from message 40" in plan.reason


def test_the_moved_marker_bet_needs_the_budget_for_its_fallback_too():
    r = PriceTable.builtin().rates(OPUS)
    saving = 5900 - 20
    total = (6000 - saving) * r.write_5m - 6000 * r.cache_read + (7000 - saving) * (r.write_1h - r.cache_read)
    for banked, cut in ((0.0, False), (total * 0.99, False), (total * 1.01, True)):
        e = econ(policy="payback")
        _warm_session(e, 14, banked=banked)
        assert (e.decide(_old_client(), [Candidate("big", 35, 5900, 20)]).action == "cut") is cut, banked


@pytest.mark.parametrize("case", ["out of reach", "1h over 5m entries"])
def test_no_marker_moves_where_the_fallback_is_not_certain(case):
    # out of reach: 3 blocks per message, messages 34..40 hold 21 blocks, more than the shortest
    # lookback (12): a request replacing the last message might not look back to the pin at all;
    # a 1h marker moved where the conversation wrote 5m entries: the entry it falls back to may
    # lapse before the one it replaces would have.
    e = econ(policy="payback")
    _warm_session(e, 14)
    cands = [Candidate("big", 35, 5900, 20)]
    assert e.decide(_old_client(), cands).figures["moved_from"] == 40  # (the same cut, in reach, moves)
    shape = _old_client(blocks=3) if case == "out of reach" else _old_client(moved_ttl_s=3600.0)
    plan = e.decide(shape, cands)
    assert plan.figures.get("boundary") != "pinned" and plan.figures.get("moved_from") is None
