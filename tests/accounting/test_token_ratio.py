import random

import pytest

from scalpel_desktop.accounting.token_ratio import MIN_FIT, ConversationRatios, for_request, lad, spread_pct


def test_lad_finds_slope_and_intercept_and_ignores_an_outlier():
    pts = [(b, round(0.27 * b + 40)) for b in (1000, 2500, 4000, 800, 6000, 3000)]
    pts.append((2000, 9000))  # a step with a large attachment
    r, c = lad(pts)
    assert r == pytest.approx(0.27, rel=0.01) and c == pytest.approx(40, abs=15)
    assert spread_pct(pts[:-1], r, c) < 1.0


def test_a_conversation_fits_its_own_ratio_after_enough_pairs():
    rnd = random.Random(3)
    ratios = ConversationRatios()
    sent, prompt = 40_000, 10_000
    got = []
    for _ in range(MIN_FIT + 3):
        got.append(ratios.observe("a", "m", sent, prompt))
        step = rnd.randint(500, 9000)
        sent, prompt = sent + step, prompt + round(step * 0.3)
    assert [g.method for g in got[:MIN_FIT]] == ["own_request"] * MIN_FIT and got[MIN_FIT].method == "fit"
    assert got[0].tokens_per_byte == pytest.approx(10_000 / 40_000) and got[0].error_pct is None
    assert got[-1].method == "fit" and got[-1].tokens_per_byte == pytest.approx(0.3, rel=0.01)
    assert got[-1].error_pct is not None and got[-1].error_pct < 1.0 and got[-1].pairs == MIN_FIT + 2
    assert got[-1].previous_prompt is not None
    # another conversation of the same model borrows the fitted one until it has its own
    other = ratios.observe("b", "m", 30_000, 8_000)
    assert other.method == "pooled" and other.tokens_per_byte == pytest.approx(0.3, rel=0.01)
    assert ratios.observe("c", "other-model", 30_000, 8_000).method == "own_request"


def test_shrinking_bodies_give_no_pair():
    ratios = ConversationRatios()
    ratios.observe("a", "m", 50_000, 12_000)
    for i in range(10):  # a side request, compaction: never a step of the conversation
        r = ratios.observe("a", "m", 50_000 - i * 100, 12_000 - i * 30)
    assert r.method == "own_request" and r.pairs == 0


def test_for_request_falls_back_to_the_requests_own_ratio():
    r = for_request(None, 2_500, 10_000)
    assert (r.tokens_per_byte, r.method, r.error_pct) == (0.25, "own_request", None)
