"""The realized saving: each stub priced at the rate its position was billed at (SPEC 7)."""

from __future__ import annotations

import pytest

from scalpel_desktop.accounting.prices import PriceTable
from scalpel_desktop.accounting.token_ratio import TokenRatio
from scalpel_desktop.exchange import SurgerySent
from scalpel_desktop.surgery.realized import ESTIMATE_BYTES_PER_TOKEN, realized
from scalpel_desktop.wire.usage import Usage

# Distinct rates (USD per million tokens) so the tier a stub was priced at shows in the dollars.
PRICES = PriceTable({"as_of": "test", "families": [
    {"family": "f", "match": ["."], "input": 10.0, "output": 50.0, "cache_read": 1.0, "write_5m": 12.0,
     "write_1h": 20.0}]})
RATE = {"read": 1e-6, "w1h": 20e-6, "w5m": 12e-6, "input": 10e-6}

# 1000 prompt tokens: 600 read from cache, then 100 written at 1h, then 200 at 5m, then 100 uncached input.
USAGE = Usage(input_tokens=100, cache_write_5m=200, cache_write_1h=100, cache_read=600, output_tokens=5)


# A measured ratio of 4 bytes a token, so a stub that took 4 x N bytes out removed N tokens.
RATIO = TokenRatio(0.25, "fit", 10, 2.0)


def sent(*stubs, rewrite=0) -> SurgerySent:
    return SurgerySent(1, None, "m", [(f"t{i}", frac, saved, "new") for i, (frac, saved) in enumerate(stubs)],
                       rewrite_tokens=rewrite, bytes_removed=4 * sum(saved for _, saved in stubs))


def priced(s: SurgerySent, usage: Usage, ratio: TokenRatio | None = RATIO, sent_bytes: int = 0):
    r = realized(PRICES, s, usage, ratio, sent_bytes)
    return r.tokens, r.usd


@pytest.mark.parametrize("frac,tier", [
    (0.0, "read"), (0.3, "read"), (0.5999, "read"),
    (0.6, "w1h"), (0.65, "w1h"),
    (0.7, "w5m"), (0.85, "w5m"),
    (0.9, "input"), (0.99, "input"), (1.0, "input"),
])
def test_a_stub_is_priced_at_the_tier_its_position_was_billed_at(frac, tier):
    tokens, usd = priced(sent((frac, 1000)), USAGE)
    assert tokens == 1000
    assert usd == pytest.approx(1000 * RATE[tier])


def test_stubs_add_up_each_at_its_own_rate():
    tokens, usd = priced(sent((0.1, 100), (0.65, 200), (0.8, 300), (0.95, 400)), USAGE)
    assert tokens == 1000
    assert usd == pytest.approx(100 * RATE["read"] + 200 * RATE["w1h"] + 300 * RATE["w5m"] + 400 * RATE["input"])


def test_a_cold_request_prices_everything_at_the_input_rate():
    cold = Usage(input_tokens=1000)
    assert priced(sent((0.0, 10), (0.5, 10)), cold) == (20, pytest.approx(20 * RATE["input"]))


def test_a_warm_cut_pays_for_what_it_rewrote_at_the_tier_most_was_written_at():
    # USAGE wrote more at 5m (200) than at 1h (100): the 500 re-written tokens cost 5m minus a read each
    # (no previous prompt total known: the economist's estimate, converted with the ratio)
    rewrite = RATIO.tokens(500 * ESTIMATE_BYTES_PER_TOKEN)
    _, usd = priced(sent((0.1, 1000), rewrite=500), USAGE)
    assert usd == pytest.approx(1000 * RATE["read"] - rewrite * (RATE["w5m"] - RATE["read"]))
    hour = Usage(input_tokens=1, cache_write_5m=100, cache_write_1h=300, cache_read=600)
    _, usd = priced(sent(rewrite=500), hour)
    assert usd == pytest.approx(-rewrite * (RATE["w1h"] - RATE["read"]))


def test_a_warm_cut_with_a_known_previous_prompt_is_charged_what_the_usage_shows_was_rewritten():
    # previous prompt 1000; this request removed 100 new tokens and read 600: 300 were written again
    ratio = TokenRatio(0.25, "fit", 10, 2.0, previous_prompt=1000)
    r = realized(PRICES, sent((0.1, 100), rewrite=500), USAGE, ratio)
    assert r.provenance["rewrite"] == "usage" and r.provenance["rewrite_tokens"] == 300
    assert r.usd == pytest.approx(100 * RATE["read"] - 300 * (RATE["w5m"] - RATE["read"]))


def test_without_a_measured_ratio_the_request_s_own_prompt_over_its_bytes_is_used_and_said():
    r = realized(PRICES, sent((0.95, 100)), USAGE, None, sent_bytes=4000)  # 1000 tokens / 4000 bytes
    assert r.tokens == 100 and r.provenance["tokens"] == "own_request"


def test_no_stubs_no_saving():
    assert priced(sent(), USAGE) == (0, 0.0)


def test_a_long_prompt_is_priced_at_the_long_context_rates():
    table = PriceTable({"as_of": "test", "families": [
        {"family": "f", "match": ["."], "input": 10.0, "output": 50.0, "cache_read_x": 0.1,
         "long_context": {"above_prompt_tokens": 999, "input": 20.0, "output": 75.0}}]})
    short = Usage(input_tokens=999)
    long = Usage(input_tokens=1000)
    assert realized(table, sent((0.5, 100)), short, RATIO).usd == pytest.approx(100 * 10e-6)
    assert realized(table, sent((0.5, 100)), long, RATIO).usd == pytest.approx(100 * 20e-6)
    assert realized(table, sent((0.0, 100)), Usage(input_tokens=1, cache_read=999), RATIO).usd == pytest.approx(100 * 2e-6)
