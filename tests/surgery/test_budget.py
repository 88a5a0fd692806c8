"""surgery/budget.py: a bet is paid from what the user's cuts surely saved, within each conversation's cap."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scalpel_desktop.surgery.budget import RiskBudget, conversation_room, refusal


def test_a_fresh_install_bets_nothing_and_a_gain_now_needs_no_budget():
    assert refusal(RiskBudget(), 0.01, 0, 0, 100.0, 1.0).startswith("budget")
    assert refusal(None, 0.01, 0, 0, 100.0, 1.0).startswith("budget")
    assert refusal(RiskBudget(), -0.01, 0, 0, 0.0, 1.0) is None


def test_the_cap_is_a_share_of_what_the_conversation_cost_plus_its_own_savings():
    b = RiskBudget(saved_usd=10.0)
    assert conversation_room(0, 0, 100.0, 1.0) == pytest.approx(1.0)
    assert refusal(b, 0.99, 0, 0, 100.0, 1.0) is None
    assert refusal(b, 1.01, 0, 0, 100.0, 1.0).startswith("cap")
    assert refusal(b, 1.01, 0, 0.02, 100.0, 1.0) is None  # its own cuts saved the rest
    assert refusal(b, 0.5, 0.6, 0, 100.0, 1.0).startswith("cap")  # it staked already


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.lists(st.tuples(st.floats(0, 0.5), st.floats(-0.1, 0.5), st.floats(0, 5), st.booleans()), max_size=40))
def test_bets_made_through_the_rule_never_overdraw_the_user_or_a_conversation(events):
    # events: (saved by a cut, a bet asked for, what the conversation's request cost, a new conversation?)
    b = RiskBudget()
    conv = {"staked": 0.0, "banked": 0.0, "cost": 0.0}
    for saved, ask, cost, fresh in events:
        if fresh:
            conv = {"staked": 0.0, "banked": 0.0, "cost": 0.0}
        b.bank(saved)
        conv["banked"] += saved
        conv["cost"] += cost
        if refusal(b, ask, conv["staked"], conv["banked"], conv["cost"], 1.0) is None:
            b.stake(ask)
            conv["staked"] += ask
        assert b.balance_usd >= -1e-9  # across the ledger, never more staked than saved
        # no conversation past its cap: what it staked less what it saved, within 1% of its cost
        assert conv["staked"] - conv["banked"] <= 0.01 * conv["cost"] + 1e-9
