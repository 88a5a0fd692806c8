"""Remaining turns: the user's own history, a Lindy prior, and the three bounds."""

from __future__ import annotations

import pytest

from scalpel_desktop.surgery.remaining import (
    History,
    compaction_turns,
    horizon,
    min_sample,
    session_turns,
    survival_q,
    ttl_turns,
)


def test_q_follows_from_the_payback_factor():
    assert survival_q(2.0) == pytest.approx(2 / 3)
    assert survival_q(3.0) == pytest.approx(3 / 4)
    # worst-case expectation of a cut that repays f times when the session lasts: positive
    f = 2.0
    q = survival_q(f)
    assert q * (f - 1) - (1 - q) > 0


def test_min_sample_is_the_fewest_where_the_quantile_is_not_the_minimum():
    assert min_sample(2 / 3) == 3
    assert min_sample(3 / 4) == 4


def test_prior_on_a_fresh_install_is_lindy():
    q = survival_q(2.0)
    assert session_turns(None, 10, q) == (5, "prior")  # 10 * (1/3) / (2/3)
    assert session_turns(History(), 0, q) == (0, "prior")


def test_ledger_lengths_conditional_on_the_length_so_far():
    q = survival_q(2.0)
    h = History.of([3, 5, 12, 20, 40, 41, 60])
    # longer than 10: 12, 20, 40, 41, 60 -> remaining 2, 10, 30, 31, 50; the 1/3 quantile: index 1 -> 10 - 1
    assert session_turns(h, 10, q) == (9, "ledger")
    # longer than 40: 41 and 60 only: too few, the prior decides
    assert session_turns(h, 40, q)[1] == "prior"


def test_ttl_break_from_the_users_gaps():
    q = survival_q(2.0)
    h = History.of(gaps=[5.0] * 90 + [1000.0] * 10)  # one gap in ten is past the TTL
    turns, src = ttl_turns(h, 0, 0, 300.0, 30.0, q)
    assert src == "ledger" and 0.9 ** turns >= q > 0.9 ** (turns + 1)
    assert ttl_turns(History.of(gaps=[5.0] * 10), 0, 0, 300.0, 30.0, q) == (None, "ledger")
    # the 1h TTL: none of those gaps breaks it
    assert ttl_turns(h, 0, 0, 3600.0, 30.0, q)[0] is None


def test_ttl_break_from_the_conversation_when_the_ledger_is_empty():
    q = survival_q(2.0)
    turns, src = ttl_turns(None, 20, 4, 300.0, 30.0, q)
    assert src == "conversation" and 0.8 ** turns >= q
    assert ttl_turns(None, 1, 0, 300.0, 30.0, q) == (None, "none")


def test_compaction_bound_from_the_window_and_own_growth():
    # claude-opus-4-5: a 200k window; 20k to 120k in 10 requests: 10k a request, 8 left
    assert compaction_turns("claude-opus-4-5", 120_000, 20_000, 10) == 8
    assert compaction_turns("claude-opus-4-5", 20_000, 20_000, 10) is None


def test_horizon_is_the_least_bound():
    h = History.of(lengths=[100] * 10, gaps=[5.0] * 100)
    hz = horizon(h, model="claude-opus-4-5", so_far=10, conv_breaks=0, ttl_s=300.0, margin=30.0,
                 tokens_now=190_000, first_tokens=10_000, factor=2.0, cap=50)
    assert (hz.turns, hz.bound) == (0, "compaction")
    hz = horizon(h, model="claude-opus-4-5", so_far=10, conv_breaks=0, ttl_s=300.0, margin=30.0,
                 tokens_now=20_000, first_tokens=10_000, factor=2.0, cap=50)
    assert (hz.turns, hz.bound) == (50, "cap") and hz.session_turns == 89
    assert hz.figures()["turns_source"] == "ledger"
