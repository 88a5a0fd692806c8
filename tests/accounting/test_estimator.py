from __future__ import annotations

from hypothesis import given, strategies as st

from scalpel_desktop.accounting.estimator import (classify, estimate, estimate_block, generation, hidden_per_turn,
                                                  model_family)
from scalpel_desktop.bench.accuracy import accuracy
from tests.support import corpus_dir


def test_model_family():
    assert model_family("claude-sonnet-4-5-20250929") == "sonnet-4.5"
    assert model_family("claude-sonnet-4-20250514") == "sonnet-4"
    assert model_family("claude-opus-4-7") == "opus-4.7"
    assert model_family("claude-3-5-haiku-20241022") == "haiku-3.5"
    assert model_family("gpt-5") == "unknown"
    assert generation("opus-4.7") == "gen-2026" and generation("sonnet-4.5") == "gen-2025"


def test_classify_kinds():
    assert classify('{"a": [1, 2, 3]}') == "json"
    assert classify("     1\u2192def f(x):\n     2\u2192    return {x: (x + 1)}\n") == "code"
    assert classify("The quick brown fox jumps over the lazy dog. It was a sunny day and all was well.") == "prose"


def test_newer_tokenizer_counts_more_tokens():
    text = "The quick brown fox jumps over the lazy dog, again and again. " * 20
    assert estimate(text, family="opus-4.7") > estimate(text, family="sonnet-4.5")
    assert hidden_per_turn("opus-4.7") > 0


@given(st.text(min_size=1, max_size=400))
def test_estimate_is_positive_and_monotone(text):
    a = estimate(text)
    assert a >= 1
    assert estimate(text + text) >= a


def test_blocks_are_estimated_by_content():
    small = estimate_block({"type": "tool_result", "tool_use_id": "t", "content": "ok"})
    big = estimate_block({"type": "tool_result", "tool_use_id": "t", "content": "x = 1\n" * 1000})
    assert big > 100 * small / 10 and big > small


def test_calibrated_estimator_beats_chars4_on_the_corpus():
    scores = {s.family: s for s in accuracy(corpus_dir("transcripts"))}
    total = scores["all"]
    assert total.samples > 500
    assert total.calibrated_error_pct < total.chars4_error_pct
    assert abs(total.calibrated_bias_pct) < abs(total.chars4_bias_pct)
    # and for every family with a real number of samples
    for s in scores.values():
        if s.samples >= 40:
            assert s.calibrated_error_pct < s.chars4_error_pct, s.family


def test_a_tool_reference_counts_as_the_declaration_it_loads():
    """ToolSearch results: the API expands each reference into the tool's whole declaration."""
    from scalpel_desktop.accounting.estimator import TOOL_REFERENCE_CHARS

    one = {"type": "tool_result", "tool_use_id": "t", "content": [{"type": "tool_reference", "tool_name": "WebFetch"}]}
    three = {"type": "tool_result", "tool_use_id": "t",
             "content": [{"type": "tool_reference", "tool_name": n} for n in ("A", "B", "C")]}
    a = estimate_block(one, "opus-4.7")
    assert a > TOOL_REFERENCE_CHARS / 4  # far more than the ~40 bytes of the reference itself
    assert estimate_block(three, "opus-4.7") > 2.5 * a


def test_the_fit_reports_the_median_per_turn_term_and_the_mean():
    from scalpel_desktop.bench.calibrate import Sample, fit

    # most turns add 50 hidden tokens, a few add 5,000: the median stays near 50
    samples = []
    for i in range(60):
        extra = 5000 if i % 10 == 0 else 50
        chars = {"prose": 300 + 7 * i, "code": 0, "json": 0}
        samples.append(Sample("sonnet-4.5", round(chars["prose"] / 3.0) + 3 + extra, chars, 1, []))
    row = fit(samples)
    assert abs(row["hidden"] - 50) < 25
    assert row["hidden_mean"] > 400
