"""``bench/accuracy.py``: the two estimators scored on hand-made samples, then on a transcript."""

from __future__ import annotations

import pytest

from scalpel_desktop.accounting.estimator import estimate_chars, hidden_per_turn
from scalpel_desktop.bench.accuracy import accuracy, calibrated, chars4, score
from scalpel_desktop.bench.calibrate import Sample
from tests.bench.transcripts import Transcript, simple_session, text, usage


def sample(family: str, tokens: int, prose: int = 0, code: int = 0, json: int = 0, blocks: int = 1) -> Sample:
    return Sample(family, tokens, {"prose": prose, "code": code, "json": json}, blocks, [])


def test_chars4_error_and_bias_are_weighted_by_the_real_tokens():
    # chars/4 says 100 and 50; the provider counted 80 and 100: |20| + |-50| over 180 real
    s = [sample("sonnet-4.5", 80, prose=400), sample("sonnet-4.5", 100, code=200)]
    sc = score("sonnet-4.5", s)
    assert (sc.family, sc.samples, sc.real_tokens) == ("sonnet-4.5", 2, 180)
    assert sc.chars4_error_pct == pytest.approx(100 * 70 / 180)
    assert sc.chars4_bias_pct == pytest.approx(100 * -30 / 180)


def test_calibrated_is_the_estimator_plus_the_hidden_tokens_per_turn():
    s = sample("sonnet-4.5", 500, prose=1000, code=300, blocks=3)
    assert calibrated(s) == pytest.approx(estimate_chars(s.chars, 3, "sonnet-4.5") + hidden_per_turn("sonnet-4.5"))
    assert chars4(s) == 325.0
    exact = sample("sonnet-4.5", round(calibrated(s)), prose=1000, code=300, blocks=3)
    assert score("x", [exact]).calibrated_error_pct < 0.1  # an estimate that matches scores ~0


def test_as_dict_rounds_floats_to_three_places_and_keeps_ints():
    d = score("haiku-4.5", [sample("haiku-4.5", 3, prose=10)]).as_dict()
    assert d["samples"] == 1 and d["real_tokens"] == 3
    assert d["chars4_error_pct"] == round(100 * 0.5 / 3, 3) == 16.667  # 10 chars / 4 = 2.5 vs 3 real
    assert all(isinstance(v, (int, str)) or v == round(v, 3) for v in d.values())


def test_no_samples_scores_zero_instead_of_dividing_by_zero():
    sc = score("all", [])
    assert sc.samples == 0 and sc.chars4_error_pct == 0.0 and sc.calibrated_bias_pct == 0.0


def test_accuracy_scores_each_family_sorted_then_all(tmp_path):
    simple_session(tmp_path / "p" / "sonnet.jsonl", turns=6)
    tr = Transcript(session="22222222-2222-4333-8444-555555555555", model="claude-haiku-4-5-20251001")
    tr.user("hi")
    tr.response([text("a")], usage(w5=12_000))
    tr.user("tell me more " * 50)
    tr.response([text("b")], usage(read=12_000, w5=200))
    tr.write(tmp_path / "p" / "haiku.jsonl")
    scores = accuracy(tmp_path)
    assert [s.family for s in scores] == ["haiku-4.5", "sonnet-4.5", "all"]
    assert scores[0].samples == 1 and scores[0].real_tokens == 200  # the growth of the prompt (12,203 - 12,003)
    assert scores[-1].samples == scores[0].samples + scores[1].samples
    assert scores[-1].real_tokens == scores[0].real_tokens + scores[1].real_tokens


def test_accuracy_of_an_empty_dir_is_empty(tmp_path):
    assert accuracy(tmp_path) == []
