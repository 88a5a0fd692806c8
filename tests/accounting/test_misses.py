"""``accounting/misses.py``: the miss test, its price, the causes a transcript shows, the totals.

Every figure below is worked out by hand from the usage counts and rates given
here; the rates are a hand-built ``Rates`` (sonnet's list prices per token), so
nothing is read back from the price table the code uses.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scalpel_desktop.accounting import misses as mm
from scalpel_desktop.accounting.prices import PriceTable, Rates
from scalpel_desktop.wire.usage import Usage

M = 1e-6
RATES = Rates(input=3 * M, output=15 * M, cache_read=0.3 * M, write_5m=3.75 * M, write_1h=6 * M,
              as_of="test", family="hand")
SONNET = "claude-sonnet-4-5-20250929"  # minimum cacheable length 1,024 (cache_model.MIN_CACHEABLE_TABLE)


def u(read=0, w5=0, w1=0, inp=3) -> Usage:
    return Usage(input_tokens=inp, cache_write_5m=w5, cache_write_1h=w1, cache_read=read, output_tokens=10)


def test_the_cause_names_are_the_issues():
    assert mm.CAUSES == ("ttl-expired", "model-switch", "system-changed", "tools-changed", "settings-changed",
                         "client-rewrite", "lookback", "unexplained")
    assert set(mm.TRANSCRIPT_CAUSES) <= set(mm.CAUSES)
    with pytest.raises(ValueError, match="unknown miss cause 'ttl'"):
        mm.Miss(SONNET, 1, 0.0, 0, "ttl")


def test_a_read_short_of_what_was_cached_is_a_miss_priced_at_write_minus_read():
    prev = u(read=10_000, w5=5_000)  # leaves 15,000 cached
    got = mm.find_miss(SONNET, prev, u(read=12_000, w5=4_000), RATES, mm.UNEXPLAINED, {"gap_s": 1.0},
                       conversation="c", request="r")
    # 3,000 re-written (of the 4,000 written: 1,000 is new), each 3.75 - 0.30 $/MTok dearer than a read
    assert got == mm.Miss(SONNET, 3_000, pytest.approx(3_000 * 3.45 * M), 12_000, "unexplained", {"gap_s": 1.0},
                          "c", "r")
    assert got.cost_usd == pytest.approx(0.01035)


def test_the_shortfall_must_exceed_the_models_minimum_cacheable_length():
    prev = u(read=10_000, w5=5_000)
    assert mm.find_miss(SONNET, prev, u(read=15_000 - 1_024, w5=3_000), RATES) is None
    assert mm.find_miss(SONNET, prev, u(read=15_000 - 1_025, w5=3_000), RATES).tokens_rewritten == 1_025
    opus_46 = "claude-opus-4-6"  # 4,096
    assert mm.find_miss(opus_46, prev, u(read=15_000 - 4_096, w5=5_000), RATES) is None
    assert mm.rewritten_tokens(prev, u(read=15_000 - 2_000, w5=5_000), opus_46, floor=1_999) == 2_000


def test_the_tokens_are_capped_by_the_writes_and_nothing_written_is_no_miss():
    prev = u(read=0, w5=30_000)
    assert mm.find_miss(SONNET, prev, u(read=0, w5=5_000), RATES).tokens_rewritten == 5_000  # a shorter prompt
    assert mm.find_miss(SONNET, prev, u(read=0, w5=0, inp=30_000), RATES) is None  # no breakpoint wrote
    assert mm.find_miss(SONNET, None, u(read=0, w5=30_000), RATES) is None  # nothing known cached


def test_one_hour_writes_are_billed_first_and_the_one_hour_rate_applies():
    prev = u(w1=20_000)
    # 12,000 re-written; 10,000 of the writes were 1-hour (they come first), the other 2,000 5-minute
    got = mm.find_miss(SONNET, prev, u(read=8_000, w1=10_000, w5=4_000), RATES)
    assert got.tokens_rewritten == 12_000
    assert got.cost_usd == pytest.approx(10_000 * 5.7 * M + 2_000 * 3.45 * M)


def test_the_price_comes_from_the_price_table_with_its_long_context_rates():
    rates = PriceTable.builtin().rates("claude-sonnet-4-20250514")  # 3 $/MTok; 6 above 200k prompt tokens
    short = mm.find_miss("claude-sonnet-4-20250514", u(w5=10_000), u(w5=12_000), rates)
    assert short.cost_usd == pytest.approx(10_000 * (3.75 - 0.30) * M)  # 1.25x and 0.1x of 3 $/MTok
    long = mm.find_miss("claude-sonnet-4-20250514", u(w5=10_000), u(w5=12_000, inp=200_000), rates)
    assert long.cost_usd == pytest.approx(10_000 * (7.5 - 0.6) * M)  # the whole request at 6 $/MTok


def test_usage_ttl_carries_what_the_writes_say():
    assert mm.usage_ttl(u(w1=1, w5=5), "5m") == "1h"
    assert mm.usage_ttl(u(w5=5), "1h") == "5m"
    assert mm.usage_ttl(u(read=9), "1h") == "1h"


def test_transcript_causes_in_order_clock_rewrite_model_else_unexplained():
    rewrite = {"message": 3, "compaction": False}
    assert mm.transcript_cause(306.7, "5m", 30.0, rewrite, "claude-haiku-4-5") == (
        "ttl-expired", {"gap_s": 306.7, "ttl": "5m", "past_ttl_s": 6.7, "within_margin": True})
    assert mm.transcript_cause(400.0, "5m", 30.0)[1]["within_margin"] is False
    assert mm.transcript_cause(300.0, "5m", 30.0)[0] == "unexplained"  # at the TTL, not past it
    assert mm.transcript_cause(400.0, "1h", 30.0, rewrite) == (
        "client-rewrite", {"gap_s": 400.0, "ttl": "1h", "message": 3, "compaction": False})
    assert mm.transcript_cause(5.0, "5m", 30.0, None, "claude-haiku-4-5") == (
        "model-switch", {"gap_s": 5.0, "ttl": "5m", "from": "claude-haiku-4-5"})
    assert mm.transcript_cause(5.0, "5m", 30.0) == ("unexplained", {"gap_s": 5.0, "ttl": "5m"})


def test_a_rewritten_message_is_described_by_its_structure_never_its_content():
    was = {"role": "user", "content": [{"type": "text", "text": "secret"}, {"type": "image"}]}
    assert mm.structure_change(was, {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "x"}]}) \
        == {"was": {"role": "user", "blocks": ["text", "image"]}, "now": {"role": "user", "blocks": ["image", "text"]},
            "changed": ["order"]}
    assert mm.structure_change(was, {"role": "assistant", "content": "y"})["changed"] == ["role", "block types"]
    same = mm.structure_change({"role": "user", "content": "a"}, {"role": "user", "content": [{"type": "text"}]})
    assert same["changed"] == ["content"] and "secret" not in repr(mm.structure_change(was, None))


def test_the_summary_totals_by_cause_in_the_issues_order():
    got = [mm.Miss(SONNET, 100, 0.5, 0, "unexplained"), mm.Miss(SONNET, 300, 1.5, 0, "ttl-expired"),
           mm.Miss(SONNET, 50, 0.25, 10, "unexplained")]
    s = mm.summary(got, 10.0)
    assert s == {"count": 3, "tokens": 450, "cost_usd": 2.25, "cost_pct": 22.5,
                 "by_cause": {"ttl-expired": {"count": 1, "tokens": 300, "cost_usd": 1.5},
                              "unexplained": {"count": 2, "tokens": 150, "cost_usd": 0.75}}}
    assert list(s["by_cause"]) == ["ttl-expired", "unexplained"]
    assert mm.summary([], 0.0) == {"count": 0, "tokens": 0, "cost_usd": 0.0, "cost_pct": 0.0, "by_cause": {}}


usages = st.builds(u, read=st.integers(0, 200_000), w5=st.integers(0, 50_000), w1=st.integers(0, 50_000))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 60_000), st.integers(0, 1)), min_size=1, max_size=12),
       st.integers(0, 100_000))
def test_reads_that_reach_what_was_cached_are_never_misses(steps, start):
    """Each read equals (or passes) the previous request's read plus writes: no miss, whatever grew."""
    prev = u(w5=start)
    for grow, extra in steps:
        cur = u(read=mm.cached_after(prev) + extra, w5=grow)
        assert mm.find_miss(SONNET, prev, cur, RATES) is None
        prev = cur


@settings(max_examples=300, deadline=None)
@given(usages, usages, st.sampled_from([SONNET, "claude-opus-4-6", "claude-opus-4-7", "unknown"]))
def test_a_miss_never_rewrites_more_than_its_writes_or_its_shortfall_and_costs_more_than_nothing(prev, cur, model):
    got = mm.find_miss(model, prev, cur, RATES)
    if got is None:
        return
    assert 0 < got.tokens_rewritten <= cur.cache_write
    assert got.tokens_rewritten <= mm.cached_after(prev) - cur.cache_read
    assert got.cost_usd > 0 and got.read_stopped_at == cur.cache_read


def _msg(role, n, marked_at=None):
    blocks = [{"type": "text", "text": f"b{i}"} for i in range(n)]
    if marked_at is not None:
        blocks[marked_at]["cache_control"] = {"type": "ephemeral"}
    return {"role": role, "content": blocks}


def test_last_marker_and_the_blocks_to_the_next_one():
    from scalpel_desktop.accounting.misses import blocks_to_next_marker, last_marker

    before = [_msg("user", 2), _msg("assistant", 1), _msg("user", 3, marked_at=2)]
    assert last_marker(before) == (2, 2)
    assert last_marker([_msg("user", 2), {"role": "user", "content": "hi"}], auto=True) == (1, 0)
    assert last_marker([_msg("user", 2)]) is None
    # 15 parallel calls: one assistant message of 15 tool_use blocks, one user message of 15 results
    after = [*[dict(m, content=[{k: v for k, v in b.items() if k != "cache_control"} for b in m["content"]])
               for m in before], _msg("assistant", 15), _msg("user", 15, marked_at=14)]
    assert blocks_to_next_marker(after, (2, 2)) == 30
    assert blocks_to_next_marker(after[:4], (2, 2)) is None  # no marker past it
    assert blocks_to_next_marker([*after[:4], {"role": "user", "content": "x"}], (2, 2), auto=True) == 16
