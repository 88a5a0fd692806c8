"""surgery/keeper.py: the keeper pings only while a return repays it, never past the ski-rental bound."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scalpel_desktop.accounting.prices import PriceTable
from scalpel_desktop.surgery.keeper import (
    MIN_PAUSES,
    Pauses,
    plan,
    quote,
    realized_saving,
    ski_rental_bound,
)

PRICES = PriceTable.builtin()
SONNET = PRICES.rates("claude-sonnet-4-5")  # read 0.1x, 5m write 1.25x
OPUS5 = PRICES.rates("claude-opus-5-5")
T, MARGIN = 300.0, 30.0
LEAD = MARGIN + 1.0


def test_the_quote_is_the_price_tables():
    q = quote(SONNET, 100_000, "5m")
    assert q.ping_usd == pytest.approx(100_000 * SONNET.cache_read + SONNET.output)
    assert q.rewrite_usd == pytest.approx(100_000 * (SONNET.write_5m - SONNET.cache_read))
    assert q.free_usd == 0 and q.avoided_usd == q.rewrite_usd
    # a cold break that cuts 10k dead tokens for free, read on 5 later requests: not all of the re-write is gain
    f = quote(SONNET, 100_000, "5m", free_tokens=10_000, later_turns=5)
    assert f.free_usd == pytest.approx(10_000 * (SONNET.write_5m + 5 * SONNET.cache_read))
    assert f.avoided_usd < q.avoided_usd
    # one re-write pays for floor((w - r) / r) pings at most: 11 at 0.1x read and 1.25x write
    assert ski_rental_bound(q) == math.floor((SONNET.write_5m - SONNET.cache_read) / SONNET.cache_read
                                             * (100_000 * SONNET.cache_read) / q.ping_usd)
    assert ski_rental_bound(q) == 11
    assert ski_rental_bound(quote(SONNET, 100_000, "1h")) > ski_rental_bound(q)  # 2x write at 1 h


def test_a_person_who_comes_back_in_the_second_ping_cover_gets_two_pings():
    q = quote(SONNET, 50_000, "5m")
    p = plan(q, Pauses.of([600.0] * 5), T, 2.0, LEAD, MARGIN)
    assert p.pings == 2 and p.at == (T - LEAD, 2 * (T - LEAD))
    assert all(v > 0 for v in p.values)


def test_no_ping_without_the_ledgers_evidence():
    q = quote(SONNET, 50_000, "5m")
    assert plan(q, Pauses.of([600.0] * (MIN_PAUSES - 1)), T, 2.0, LEAD, MARGIN).pings == 0  # too few pauses
    assert plan(q, Pauses.of([], ended=50), T, 2.0, LEAD, MARGIN).pings == 0  # nobody ever came back
    assert plan(q, Pauses.of([10.0] * 100), T, 2.0, LEAD, MARGIN).pings == 0  # nobody ever paused that long
    assert plan(quote(SONNET, 0, "5m"), Pauses.of([600.0] * 5), T, 2.0, LEAD, MARGIN).pings == 0  # nothing cached
    # a return within the margin was warm without a ping: it does not pay for one
    assert plan(q, Pauses.of([T + MARGIN - 1] * 20), T, 2.0, LEAD, MARGIN).pings == 0
    # a cold break that frees more than the re-write: never worth keeping
    big = quote(SONNET, 50_000, "5m", free_tokens=40_000, later_turns=10)
    assert big.avoided_usd < 0 and plan(big, Pauses.of([600.0] * 5), T, 2.0, LEAD, MARGIN).pings == 0


def test_the_break_even_is_the_read_over_the_write_less_the_read():
    """A ping repays when the share of pauses still going that end inside its cover beats c / A."""
    q = quote(SONNET, 50_000, "5m")
    ratio = q.ping_usd / q.avoided_usd  # about 0.087
    for returns, ended, want in ((10, 90, True), (8, 92, False)):  # 10 % > 8.7 % > 8 %
        p = plan(q, Pauses.of([450.0] * returns, ended), T, 2.0, LEAD, MARGIN)
        assert (p.pings > 0) is want, (returns / (returns + ended), ratio)


def test_realized_saving_is_what_the_read_shows_less_the_free_cut():
    q = quote(SONNET, 50_000, "5m", free_tokens=5_000, later_turns=2)
    assert realized_saving(q, 50_000) == pytest.approx(q.rewrite_usd - q.free_usd)
    assert realized_saving(q, 25_000) == pytest.approx(max(0.0, q.rewrite_usd / 2 - q.free_usd))
    assert realized_saving(q, 0) == 0.0


@settings(max_examples=200, deadline=None, derandomize=True)
@given(prefix=st.integers(0, 400_000), tail=st.integers(0, 5_000), free=st.integers(0, 100_000),
       later=st.integers(0, 50), ttl=st.sampled_from(["5m", "1h"]), answer=st.floats(0, 400),
       margin=st.floats(0, 30), first_byte=st.floats(0, 10),
       gaps=st.lists(st.floats(0, 40_000), max_size=60), ended=st.integers(0, 60),
       model=st.sampled_from(["claude-sonnet-4-5", "claude-opus-5-5", "claude-haiku-4-5", "claude-opus-4-1"]))
def test_never_past_the_ski_rental_bound_and_only_while_it_pays(prefix, tail, free, later, ttl, answer, margin,
                                                                 first_byte, gaps, ended, model):
    rates = PRICES.rates(model)
    q = quote(rates, prefix, ttl, tail_tokens=tail, free_tokens=free, later_turns=later)
    ttl_s = 300.0 if ttl == "5m" else 3600.0
    pauses = Pauses.of(gaps, ended)
    p = plan(q, pauses, ttl_s, answer, margin + 1.0 + first_byte, margin)
    bound = ski_rental_bound(q)
    assert 0 <= p.pings <= bound
    assert p.pings * q.ping_usd <= max(0.0, q.avoided_usd) + 1e-12  # the pings cost at most one re-write
    r = rates.for_prompt(prefix + tail)
    w = r.write_1h if ttl == "1h" else r.write_5m
    assert bound <= math.floor((w - r.cache_read) / r.cache_read + 1e-9)  # ping >= prefix x read
    assert len(p.values) == p.pings and all(v > 0 for v in p.values)
    assert list(p.at) == sorted(p.at) and all(t > 0 for t in p.at)
    if p.pings:
        assert pauses.beyond(p.at[0] - answer) >= MIN_PAUSES
        # more answers nobody came back to never buy more pings
        assert plan(q, Pauses.of(gaps, ended + 10), ttl_s, answer, margin + 1.0 + first_byte, margin).pings <= p.pings


def test_opus5_reads_at_a_twentieth_so_one_rewrite_pays_for_more_pings():
    assert ski_rental_bound(quote(OPUS5, 100_000, "5m")) > ski_rental_bound(quote(SONNET, 100_000, "5m"))


@settings(max_examples=100, deadline=None, derandomize=True)
@given(afford=st.integers(0, 30), gaps=st.lists(st.floats(250, 5000), min_size=3, max_size=40), ended=st.integers(0, 20))
def test_never_more_pings_than_the_budget_funds(afford, gaps, ended):
    q = quote(SONNET, 50_000, "5m")
    p = plan(q, Pauses.of(gaps, ended), T, 2.0, LEAD, MARGIN, affordable=afford)
    assert p.pings <= afford and p.pings * q.ping_usd <= afford * q.ping_usd
    assert afford or (p.pings == 0 and "budget" in p.reason)
