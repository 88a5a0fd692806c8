"""surgery/ttl_margin.py: how far past its TTL a cache still answers, from the user's own reads."""

from __future__ import annotations

from scalpel_desktop.surgery.ttl_margin import MIN_OBSERVATIONS, learned_margin
from scalpel_desktop.wire.cache_rules import overrun
from tests.surgery.economist_shapes import KEY, OPUS, econ, shape, units


def test_the_prior_holds_until_enough_reads_after_long_gaps():
    assert learned_margin([(6.7, False)] * (MIN_OBSERVATIONS - 1), 30.0) == (30.0, "prior")
    # the shared corpus's four: alive at 1.8 s past a 5-minute TTL, gone at 6.7, 18.1, 26.5
    seen = [(1.8, True), (6.7, False), (18.1, False), (26.5, False)]
    margin, source = learned_margin(seen, 30.0)
    assert source == "ledger" and abs(margin - 2.8) < 1e-9
    assert abs(learned_margin(seen + [(12.0, True)], 30.0)[0] - 13.0) < 1e-9  # a later read moves it at once
    assert learned_margin(seen + [(29.5, True)], 30.0)[0] == 30.0  # never above the prior
    assert abs(learned_margin(seen + [(400.0, True)], 30.0)[0] - 2.8) < 1e-9  # past the prior: not evidence
    assert learned_margin([(60.0, False)] * 5, 30.0) == (30.0, "prior")  # outside the prior: no evidence


def test_an_observation_needs_a_gap_past_the_ttl_and_a_read_to_compare():
    assert overrun(306.7, 300.0, 40_000, 2_000) == (306.7 - 300.0, False)
    assert overrun(301.8, 300.0, 90_000, 93_000) == (301.8 - 300.0, True)
    assert overrun(200.0, 300.0, 90_000, 0) is None and overrun(400.0, 300.0, 0, 0) is None


def _after_gap(e, gap, read, at):
    s1 = shape(units(10), at=at)
    e.record_finished(KEY, OPUS, e.record_sent(s1), at + 1.0, cache_read=5000, cache_written=100)
    s2 = shape(units(12), at=at + 1.0 + gap)
    e.record_finished(KEY, OPUS, e.record_sent(s2), at + 2.0 + gap, cache_read=read, cache_written=100)


def test_the_economist_learns_the_margin_from_the_answers_it_sees():
    e = econ()
    assert e.ttl_margin() == 30.0
    t = 0.0
    for gap, read in ((301.8, 6000), (306.7, 0), (318.1, 0)):
        _after_gap(e, gap, read, t)
        t += 10_000.0
    assert abs(e.ttl_margin() - 2.8) < 1e-6
    # a gap of 310 s past the previous answer is now cold (it was warm under the 30 s prior)
    s = shape(units(10), at=t)
    e.record_finished(KEY, OPUS, e.record_sent(s), t + 1.0, cache_read=5000, cache_written=100)
    assert e.natural_break(shape(units(12), at=t + 1.0 + 310.0)).reason == "ttl-expired"
