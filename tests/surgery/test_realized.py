"""The realized saving: each stub priced at the rate its position was billed at (SPEC 7)."""

from __future__ import annotations

import pytest

from scalpel_desktop.accounting.prices import PriceTable
from scalpel_desktop.exchange import SurgerySent
from scalpel_desktop.surgery.realized import realized
from scalpel_desktop.wire.usage import Usage

# Distinct rates (USD per million tokens) so the tier a stub was priced at shows in the dollars.
PRICES = PriceTable({"as_of": "test", "families": [
    {"family": "f", "match": ["."], "input": 10.0, "output": 50.0, "cache_read": 1.0, "write_5m": 12.0,
     "write_1h": 20.0}]})
RATE = {"read": 1e-6, "w1h": 20e-6, "w5m": 12e-6, "input": 10e-6}

# 1000 prompt tokens: 600 read from cache, then 100 written at 1h, then 200 at 5m, then 100 uncached input.
USAGE = Usage(input_tokens=100, cache_write_5m=200, cache_write_1h=100, cache_read=600, output_tokens=5)


def sent(*stubs, rewrite=0) -> SurgerySent:
    return SurgerySent(1, None, "m", [(f"t{i}", frac, saved, "new") for i, (frac, saved) in enumerate(stubs)],
                       rewrite_tokens=rewrite)


@pytest.mark.parametrize("frac,tier", [
    (0.0, "read"), (0.3, "read"), (0.5999, "read"),
    (0.6, "w1h"), (0.65, "w1h"),
    (0.7, "w5m"), (0.85, "w5m"),
    (0.9, "input"), (0.99, "input"), (1.0, "input"),
])
def test_a_stub_is_priced_at_the_tier_its_position_was_billed_at(frac, tier):
    tokens, usd = realized(PRICES, sent((frac, 1000)), USAGE)
    assert tokens == 1000
    assert usd == pytest.approx(1000 * RATE[tier])


def test_stubs_add_up_each_at_its_own_rate():
    tokens, usd = realized(PRICES, sent((0.1, 100), (0.65, 200), (0.8, 300), (0.95, 400)), USAGE)
    assert tokens == 1000
    assert usd == pytest.approx(100 * RATE["read"] + 200 * RATE["w1h"] + 300 * RATE["w5m"] + 400 * RATE["input"])


def test_a_cold_request_prices_everything_at_the_input_rate():
    cold = Usage(input_tokens=1000)
    assert realized(PRICES, sent((0.0, 10), (0.5, 10)), cold) == (20, pytest.approx(20 * RATE["input"]))


def test_a_warm_cut_pays_for_what_it_rewrote_at_the_tier_most_was_written_at():
    # USAGE wrote more at 5m (200) than at 1h (100): the 500 re-written tokens cost 5m minus a read each
    _, usd = realized(PRICES, sent((0.1, 1000), rewrite=500), USAGE)
    assert usd == pytest.approx(1000 * RATE["read"] - 500 * (RATE["w5m"] - RATE["read"]))
    hour = Usage(input_tokens=1, cache_write_5m=100, cache_write_1h=300, cache_read=600)
    _, usd = realized(PRICES, sent(rewrite=500), hour)
    assert usd == pytest.approx(-500 * (RATE["w1h"] - RATE["read"]))


def test_no_stubs_no_saving():
    assert realized(PRICES, sent(), USAGE) == (0, 0.0)


def test_a_long_prompt_is_priced_at_the_long_context_rates():
    table = PriceTable({"as_of": "test", "families": [
        {"family": "f", "match": ["."], "input": 10.0, "output": 50.0, "cache_read_x": 0.1,
         "long_context": {"above_prompt_tokens": 999, "input": 20.0, "output": 75.0}}]})
    short = Usage(input_tokens=999)
    long = Usage(input_tokens=1000)
    assert realized(table, sent((0.5, 100)), short)[1] == pytest.approx(100 * 10e-6)
    assert realized(table, sent((0.5, 100)), long)[1] == pytest.approx(100 * 20e-6)
    assert realized(table, sent((0.0, 100)), Usage(input_tokens=1, cache_read=999))[1] == pytest.approx(100 * 2e-6)
