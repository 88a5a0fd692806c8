"""``bench/calibrate.py``: which prompt growths become samples, and the fit recovering a known table."""

from __future__ import annotations

import pytest

from scalpel_desktop.bench.calibrate import BLOCK_OVERHEAD, Sample, fit, fit_by_family, main, samples_of
from scalpel_desktop.bench.reader import read_file
from tests.bench.transcripts import Transcript, simple_session, text, usage

HAIKU = "claude-haiku-4-5-20251001"


def three_turns(tmp_path, third_model: str | None = None, third_usage: dict | None = None):
    tr = Transcript()
    tr.user("hi")
    tr.response([text("Hello.")], usage(w5=10_000))
    tr.user("what does a.py do")
    tr.response([text("It prints.")], usage(read=10_000, w5=120))
    tr.user("thanks")
    tr.response([text("ok")], third_usage or usage(read=10_120, w5=30), model=third_model)
    return read_file(tr.write(tmp_path / "s.jsonl")).sequences[0]


def test_each_growth_of_the_prompt_is_one_sample_of_the_content_added(tmp_path):
    seq = three_turns(tmp_path)
    got = samples_of(seq)
    assert [(s.family, s.tokens, s.blocks) for s in got] == [("sonnet-4.5", 120, 2), ("sonnet-4.5", 30, 2)]
    assert got[0].content == [text("Hello."), text("what does a.py do")]
    assert got[0].chars == {"prose": len("Hello.") + len("what does a.py do"), "code": 0, "json": 0}


def test_a_model_switch_or_a_prompt_that_did_not_grow_gives_no_sample(tmp_path):
    assert len(samples_of(three_turns(tmp_path / "a", third_model=HAIKU))) == 1  # another model, another cache
    assert len(samples_of(three_turns(tmp_path / "b", third_usage=usage(read=10_000, w5=0)))) == 1


def synthetic(n: int, cpt: dict[str, float], hidden: float, family: str = "sonnet-4.5") -> list[Sample]:
    """Samples whose tokens follow a known table exactly (but for rounding)."""
    out = []
    for i in range(n):
        chars = {"prose": 200 + 97 * (i % 13), "code": 150 * (i % 7), "json": 80 * (i % 5)}
        blocks = 1 + i % 3
        tokens = sum(v / cpt[k] for k, v in chars.items()) + BLOCK_OVERHEAD * blocks + hidden
        out.append(Sample(family, round(tokens), chars, blocks, []))
    return out


def test_the_fit_recovers_the_chars_per_token_it_was_made_from():
    table = fit(synthetic(120, {"prose": 4.0, "code": 3.2, "json": 2.5}, hidden=40.0))
    assert table["prose"] == pytest.approx(4.0, abs=0.05)
    assert table["code"] == pytest.approx(3.2, abs=0.05)
    assert table["json"] == pytest.approx(2.5, abs=0.05)
    assert table["hidden"] == pytest.approx(40.0, abs=1.5)
    assert table["overhead"] == BLOCK_OVERHEAD and table["samples"] == 120


def test_the_per_turn_term_is_the_median_not_dragged_by_a_few_huge_turns():
    samples = synthetic(100, {"prose": 4.0, "code": 3.0, "json": 3.0}, hidden=20.0)
    for s in samples[:5]:  # content the transcript does not show: thousands of tokens on a few turns
        s.tokens += 5000
    table = fit(samples)
    assert table["hidden"] == pytest.approx(20.0, abs=3.0)
    assert table["hidden_mean"] > table["hidden"] + 200


def test_fit_by_family_fits_only_where_there_are_enough_samples():
    samples = (synthetic(50, {"prose": 4.0, "code": 3.0, "json": 3.0}, 10.0, "sonnet-4.5")
               + synthetic(10, {"prose": 3.0, "code": 2.5, "json": 2.5}, 10.0, "opus-4.7"))
    table = fit_by_family(samples)
    assert list(table) == ["gen-2025", "sonnet-4.5"]  # opus-4.7 (gen-2026): 10 samples, under 40
    assert table["gen-2025"]["samples"] == table["sonnet-4.5"]["samples"] == 50
    assert set(fit_by_family(samples, min_samples=5)) == {"gen-2025", "gen-2026", "sonnet-4.5", "opus-4.7"}


def test_main_prints_one_row_per_fitted_family(tmp_path, capsys):
    assert main([str(tmp_path)]) == 0  # no transcripts: nothing fitted, nothing printed
    assert capsys.readouterr().out == ""
    simple_session(tmp_path / "p" / "long.jsonl", turns=45)
    assert main([str(tmp_path)]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert [r.split(" ", 1)[0] for r in rows] == ["gen-2025", "sonnet-4.5"]
    assert "'samples': 44" in rows[0]
