"""The economist's natural break and its cold policy, case by case (the warm policies: test_payback.py)."""

from __future__ import annotations

import pytest

from scalpel_desktop.surgery.economist import tool_changes_beta
from scalpel_desktop.surgery.plan import MIN_CACHEABLE_GUARD, Candidate, RequestShape
from scalpel_desktop.wire.cache_rules import ttl_seconds
from tests.surgery.economist_shapes import KEY, OPUS, HAIKU, econ, shape, sent, units


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


def test_an_observed_rewrite_hint_moves_the_break():
    e = econ()
    sent(e, shape(units(20), at=0))
    s = RequestShape(key=KEY, model=OPUS, at=30, unit_hashes=tuple(units(22)), tools_hash="T",
                     system_hash="S", settings_hash="X", ttl_s=300, rewrite_at=4)
    b = e.natural_break(s)
    assert (b.index, b.reason) == (4, "client-rewrite")
