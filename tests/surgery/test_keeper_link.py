"""surgery/keeper_link.py: the keeper reads the economist's state, stakes from the user's budget, and a
ping it made keeps the cache warm in the economist's eyes too."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from scalpel_desktop.surgery import keeper_link as link
from scalpel_desktop.surgery.budget import RiskBudget
from scalpel_desktop.surgery.keeper import Pauses
from scalpel_desktop.wire.usage import Usage
from tests.surgery.economist_shapes import KEY, OPUS, econ, shape, units

CACHED = Usage(input_tokens=3, cache_write_5m=2_000, cache_read=48_000, output_tokens=40)
BACK = Pauses.of([600.0] * 5)


def _conv(e, at=1000.0, cost=10.0, banked=0.0):
    s = shape(units(10), at)
    serial = e.record_sent(s)
    e.record_finished(KEY, OPUS, serial, at + 2.0, cache_read=CACHED.cache_read, cache_written=CACHED.cache_write,
                      cost_usd=cost, saved_usd=banked)
    return s, serial


def test_the_plan_comes_from_the_economists_state():
    e = econ()
    _conv(e)
    empty = link.pause_plan(e, KEY, OPUS, CACHED, {}, sent_at=1000.0, ended_at=1002.0, first_byte_s=1.5, pauses=BACK)
    assert empty.pings == 0 and "budget" in empty.reason  # a fresh install: nothing to stake
    e.budget.bank(10.0)
    # the cap, 1% of the $10 it cost, funds this many pings
    assert link.affordable(e, KEY, empty.quote.ping_usd) == int(0.1 / empty.quote.ping_usd) >= 2
    p = link.pause_plan(e, KEY, OPUS, CACHED, {"dead_tokens": 0}, sent_at=1000.0, ended_at=1002.0,
                        first_byte_s=1.5, pauses=BACK)
    assert p.quote.prefix_tokens == 50_000 and p.pings == 2
    assert p.step_s == 300.0 - (30.0 + 1.0 + 1.5)  # the TTL less the margin, the tick and the first byte
    # dead tokens the cold break would cut for free (a batch) are not all gain
    freed = link.pause_plan(e, KEY, OPUS, CACHED, {"dead_tokens": 9_000, "tokens_cut": 1_000}, sent_at=1000.0,
                            ended_at=1002.0, first_byte_s=1.5, pauses=BACK)
    assert freed.quote.free_usd > 0 and freed.quote.avoided_usd < p.quote.avoided_usd
    small = link.pause_plan(e, KEY, OPUS, CACHED, {"dead_tokens": 1_500}, sent_at=1000.0, ended_at=1002.0,
                            first_byte_s=1.5, pauses=BACK)
    assert small.quote.free_usd == 0  # under batch_min_tokens: a cold break would cut nothing
    # room for one ping only, and this user comes back when two are needed: none (one would keep nothing)
    link.stake(e, KEY, 0.1 - 1.5 * p.quote.ping_usd)
    assert link.affordable(e, KEY, p.quote.ping_usd) == 1
    assert link.pause_plan(e, KEY, OPUS, CACHED, {}, sent_at=1000.0, ended_at=1002.0, first_byte_s=1.5,
                           pauses=BACK).pings == 0


def test_the_budget_and_the_cap_say_when_a_ping_may_go():
    e = econ()
    _conv(e, cost=10.0)
    assert link.ping_refusal(e, KEY, 0.01).startswith("budget")  # a fresh install: nothing saved yet
    e.budget.bank(5.0)
    assert link.ping_refusal(e, KEY, 0.01) is None  # 1% of the $10 it cost
    assert link.ping_refusal(e, KEY, 0.2).startswith("cap")
    link.stake(e, KEY, 0.09)
    assert link.ping_refusal(e, KEY, 0.02).startswith("cap")  # what it staked counts
    assert e.budget.staked_usd == 0.09 and e.conversations[KEY].staked_usd == 0.09
    assert link.ping_refusal(e, ("other", ""), 0.001) is not None  # a conversation the economist does not hold


def test_a_ping_keeps_the_cache_warm_for_the_economist():
    e = econ(policy="cold")
    s, serial = _conv(e)
    back = shape(units(12), s.at + 2.0 + 600.0)  # the person comes back after 10 minutes
    assert e.natural_break(back).reason == "ttl-expired"
    ping = Usage(cache_read=50_000, output_tokens=1)
    assert not link.record_ping(e, KEY, OPUS, serial + 1, s.at + 269, s.at + 270, ping, 50_000)  # not its request
    assert not link.record_ping(e, KEY, OPUS, serial, s.at + 269, s.at + 270, Usage(cache_write_5m=10), 50_000)
    assert link.record_ping(e, KEY, OPUS, serial, s.at + 269, s.at + 270, ping, 50_000)
    assert link.record_ping(e, KEY, OPUS, serial, s.at + 538, s.at + 539, ping, 50_000)
    assert e.natural_break(back).reason == "append"  # no "free" cut that would re-write what the pings kept
    mark = next(m for m in e.conversations[KEY].entries[OPUS] if m.serial == serial)
    assert mark.at == s.at + 538 and mark.surely_live(back.at, e.ttl_margin())
    assert link.would_have_expired(e, 300.0, s.at + 2.0, back.at)
    assert not link.would_have_expired(e, 300.0, s.at + 2.0, s.at + 2.0 + 320.0)  # within the margin
    link.bank_return(e, KEY, 0.5)
    assert e.budget.saved_usd == 0.5 and e.conversations[KEY].banked_usd == 0.5


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.lists(st.tuples(st.floats(0, 0.2), st.floats(0.0001, 0.05), st.floats(0, 3), st.booleans()), max_size=40),
       st.floats(0, 5))
def test_pings_made_through_the_link_never_overdraw_the_user_or_a_conversation(events, cap):
    # events: (banked by a cut, a ping's cost, what the conversation's request cost, the person came back?)
    e = econ(risk_cap_pct=cap)
    e.budget = RiskBudget()
    _conv(e, cost=0.0)
    conv = e.conversations[KEY]
    for banked, ping, cost, back in events:
        e.budget.bank(banked)
        conv.banked_usd += banked
        conv.cost_usd += cost
        if link.ping_refusal(e, KEY, ping) is None:
            link.stake(e, KEY, ping)
        if back:
            link.bank_return(e, KEY, ping * 2)
        assert e.budget.balance_usd >= -1e-9
        assert conv.staked_usd <= conv.banked_usd + cap / 100.0 * conv.cost_usd + 1e-9
