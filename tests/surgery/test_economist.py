"""The economist's natural break and its two policies, case by case."""

from __future__ import annotations

import pytest

from scalpel_desktop.accounting.prices import PriceTable
from scalpel_desktop.surgery.economist import Economist, tool_changes_beta
from scalpel_desktop.surgery.plan import MIN_CACHEABLE_GUARD, Candidate, RequestShape
from scalpel_desktop.wire.cache_rules import ttl_seconds

KEY = ("session-1", "")
OPUS = "claude-opus-4-5"
HAIKU = "claude-haiku-4-5"


def econ(**settings):
    base = {"policy": "cold", "batch_min_tokens": 2000, "ttl_margin_s": 30, "payback_turns_min": 5,
            "payback_turns_max": 50, "payback_factor": 2.0}
    base.update(settings)
    return Economist(base, PriceTable.builtin())


def shape(units, at, *, model=OPUS, key=KEY, ttl="5m", system="S", tools="T", settings="X",
          beta=False, unit_tokens=None, total=100_000):
    return RequestShape(key=key, model=model, at=at, unit_hashes=tuple(units), tools_hash=tools,
                        system_hash=system, settings_hash=settings, ttl_s=ttl_seconds(ttl),
                        tool_changes_ok=beta, unit_tokens=unit_tokens, total_tokens=total)


def sent(e, s, finished_after=2.0, saved_usd=0.0):
    serial = e.record_sent(s)
    e.record_finished(s.key, s.model, serial, s.at + finished_after, saved_usd=saved_usd)
    return serial


def units(n, prefix="u"):
    return [f"{prefix}{i}" for i in range(n)]


def test_first_seen_session_is_warm_until_known():
    e = econ()
    b = e.natural_break(shape(units(10), at=0))
    assert (b.index, b.reason) == (9, "first-seen")
    # Even hours later: nothing is known about the cache, so nothing is cut on a guess.
    plan = e.decide(shape(units(10), at=10_000), [Candidate("a", 1, 5000, 20)])
    assert plan.action == "unchanged" and plan.natural_break.reason == "first-seen"


def test_append_break_is_the_end_of_what_was_sent():
    e = econ()
    sent(e, shape(units(10), at=0))
    b = e.natural_break(shape(units(12), at=60))
    assert (b.index, b.reason) == (10, "append")


def test_previous_last_message_rewrite_is_normal_append():
    e = econ()
    sent(e, shape(units(10), at=0))
    u = units(12)
    u[9] = "u9-without-marker"
    b = e.natural_break(shape(u, at=60))
    assert (b.index, b.reason) == (9, "append")


@pytest.mark.parametrize("gap,expect", [(300 + 30, 10), (300 + 30.5, 0), (299, 10)])
def test_ttl_5m_counts_from_response_end_plus_margin(gap, expect):
    e = econ()
    sent(e, shape(units(10), at=0, ttl="5m"), finished_after=2.0)
    b = e.natural_break(shape(units(12), at=2.0 + gap, ttl="5m"))
    assert b.index == expect
    if expect == 0:
        assert b.reason == "ttl-expired"


def test_margin_is_a_setting():
    e = econ(ttl_margin_s=0)
    sent(e, shape(units(10), at=0, ttl="5m"), finished_after=0)
    assert e.natural_break(shape(units(12), at=306)).index == 0


def test_1h_ttl_keeps_a_306s_gap_warm_and_expires_after_an_hour():
    e = econ()
    sent(e, shape(units(10), at=0, ttl="1h"), finished_after=0)
    assert e.natural_break(shape(units(12), at=306, ttl="1h")).reason == "append"
    e2 = econ()
    sent(e2, shape(units(10), at=0, ttl="1h"), finished_after=0)
    assert e2.natural_break(shape(units(12), at=3600 + 31, ttl="1h")).reason == "ttl-expired"


def test_unknown_ttl_assumes_the_longer():
    assert ttl_seconds(None) == 3600
    assert ttl_seconds("1h") == 3600 and ttl_seconds("5m") == 300


def test_in_flight_response_is_live_within_a_generous_bound():
    e = econ()
    e.record_sent(shape(units(10), at=0))  # response never finished (yet)
    assert e.natural_break(shape(units(12), at=1000)).reason == "append"
    # A response never reported (a crashed stream) does not block cuts forever.
    assert e.natural_break(shape(units(12), at=300 + 30 + 900 + 1)).reason == "ttl-expired"


def test_system_change_breaks_at_zero():
    e = econ()
    sent(e, shape(units(10), at=0))
    b = e.natural_break(shape(units(12), at=60, system="S2"))
    assert (b.index, b.reason) == (0, "system-changed")


def test_tools_change_breaks_unless_mid_conversation_beta():
    e = econ()
    sent(e, shape(units(10), at=0))
    assert e.natural_break(shape(units(12), at=60, tools="T2")).reason == "tools-changed"
    assert e.natural_break(shape(units(12), at=60, tools="T2", beta=True)).reason == "append"


def test_tool_changes_beta_header():
    assert tool_changes_beta({"anthropic-beta": "a-1,mid-conversation-tool-changes-2026-07-01,b"})
    assert not tool_changes_beta({"anthropic-beta": "context-management-2025-06-27"})
    assert not tool_changes_beta({})


def test_settings_change_breaks_messages():
    e = econ()
    sent(e, shape(units(10), at=0))
    assert e.natural_break(shape(units(12), at=60, settings="thinking-off")).index == 0


def test_client_rewrite_of_an_earlier_message():
    e = econ()
    sent(e, shape(units(20), at=0))
    u = units(23)
    u[7] = "background-task-notification"
    b = e.natural_break(shape(u, at=60))
    assert (b.index, b.reason) == (7, "client-rewrite")


def test_client_going_back_to_an_earlier_history_still_hits_its_entries():
    # Real sessions oscillate: r2 rewrites unit 7, r3 goes back to r1's unit 7.
    # r1's entries are still live, so r3's break is where r1's history ends.
    e = econ()
    sent(e, shape(units(20), at=0))
    u2 = units(22)
    u2[7] = "notification"
    sent(e, shape(u2, at=10))
    b = e.natural_break(shape(units(24), at=20))
    assert b.index == 20 and b.reason == "append"


def test_an_extended_history_replaces_the_one_it_extends():
    e = econ()
    for i in range(5):
        sent(e, shape(units(10 + 2 * i), at=10.0 * i))
    assert len(e.conversations[KEY].models[OPUS]) == 1


def test_compaction_rewrites_the_first_message():
    e = econ()
    sent(e, shape(units(40), at=0))
    b = e.natural_break(shape(["summary", "u-new"], at=60))
    assert (b.index, b.reason) == (0, "client-rewrite")


def test_side_request_to_a_small_model_keeps_the_main_cache_warm():
    e = econ()
    sent(e, shape(units(10), at=0))
    sent(e, shape(["title-request"], at=30, model=HAIKU, system="haiku-sys"))
    b = e.natural_break(shape(units(12), at=60))
    assert (b.index, b.reason) == (10, "append")
    assert b.live_models == (HAIKU,)


def test_model_switch_a_cut_must_be_free_for_every_live_model():
    e = econ()
    sent(e, shape(units(20), at=0, model=OPUS), finished_after=1)
    # Sonnet's cache expired long ago; Opus's is still live and shares 20 units.
    sent(e, shape(units(10), at=-10_000, model="claude-sonnet-4-5"), finished_after=1)
    b = e.natural_break(shape(units(22), at=100, model="claude-sonnet-4-5"))
    assert b.own_index == 0 and b.index == 20 and b.reason == f"live:{OPUS}"
    # Once Opus's cache is dead too, the break is 0.
    b = e.natural_break(shape(units(22), at=100 + 3700, model="claude-sonnet-4-5"))
    assert (b.index, b.reason) == (0, "ttl-expired")


def test_model_first_seen_in_a_known_session_is_warm():
    e = econ()
    sent(e, shape(units(10), at=0, model=OPUS), finished_after=1)
    b = e.natural_break(shape(units(12), at=10_000, model="claude-sonnet-4-5"))
    assert b.reason == "model-first-seen" and b.index == 11


def test_agents_are_separate_conversations():
    e = econ()
    sent(e, shape(units(10), at=0, key=("s", "")))
    assert e.natural_break(shape(units(3, "a"), at=10, key=("s", "agent-1"))).reason == "first-seen"


def test_cold_policy_cuts_only_free_batches():
    e = econ()
    sent(e, shape(units(30), at=0))
    cands = [Candidate("early", 3, 1500, 20), Candidate("late", 12, 1500, 20)]
    # Warm: break at 30, nothing free.
    plan = e.decide(shape(units(32), at=60), cands)
    assert plan.action == "unchanged" and "warm" in plan.reason
    # Client rewrite at 10: only "late" is free, and 1480 < 2000 is too small a batch.
    u = units(32)
    u[10] = "rewritten"
    plan = e.decide(shape(u, at=60), cands)
    assert plan.action == "unchanged" and "batch too small" in plan.reason
    # Expired: both free, a batch of 2960.
    plan = e.decide(shape(units(32), at=2 + 331), cands)
    assert plan.action == "cut" and sorted(plan.cut_ids) == ["early", "late"]
    assert plan.tokens_cut == 2960 and plan.rewrite_tokens == 0
    assert plan.figures["break"] == 0 and plan.figures["break_reason"] == "ttl-expired"


def test_cold_cuts_at_the_break_itself():
    e = econ(batch_min_tokens=100)
    sent(e, shape(units(20), at=0))
    u = units(22)
    u[10] = "rewritten"
    plan = e.decide(shape(u, at=60), [Candidate("at-break", 10, 600, 20), Candidate("before", 9, 600, 20)])
    assert plan.cut_ids == ["at-break"]


def test_off_policy_never_cuts():
    e = econ(policy="off")
    sent(e, shape(units(30), at=0))
    plan = e.decide(shape(units(32), at=100_000), [Candidate("a", 3, 50_000, 20)])
    assert plan.action == "unchanged" and plan.reason == "policy off"


def test_no_cut_that_leaves_an_uncacheable_prompt():
    e = econ()
    sent(e, shape(units(30), at=0))
    plan = e.decide(shape(units(32), at=100_000, total=MIN_CACHEABLE_GUARD + 2500),
                    [Candidate("a", 3, 3000, 20)])
    assert plan.action == "unchanged" and "minimum cacheable" in plan.reason


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
    s = _warm()
    s = RequestShape(**{**s.__dict__, "unit_blocks": [3] * 42})
    plan = e.decide(s, [Candidate("big", 35, 5000, 20)])
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
            assert plan.risk_usd == pytest.approx(extra) and plan.figures["banked_usd"] == pytest.approx(banked)
            e.record_sent(_warm(), brk=plan.natural_break, pin_unit=plan.pin_unit, risk_usd=plan.risk_usd)
            assert e.conversations[KEY].banked_usd == pytest.approx(banked - extra)


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


def test_an_observed_rewrite_hint_moves_the_break():
    e = econ()
    sent(e, shape(units(20), at=0))
    s = RequestShape(key=KEY, model=OPUS, at=30, unit_hashes=tuple(units(22)), tools_hash="T",
                     system_hash="S", settings_hash="X", ttl_s=300, rewrite_at=4)
    b = e.natural_break(s)
    assert (b.index, b.reason) == (4, "client-rewrite")
