from __future__ import annotations

from scalpel_desktop.accounting.prices import PriceTable
from scalpel_desktop.bench.check import check_report
from scalpel_desktop.bench.reader import read_file
from scalpel_desktop.bench.replay import replay_corpus, replay_sequence, totals_for
from tests.bench.transcripts import simple_session


def test_replay_sequence_runs_every_policy_and_the_ceiling(tmp_path):
    seq = read_file(simple_session(tmp_path / "s.jsonl", turns=30, gap_at=25, gap=4000.0, big=30_000)).sequences[0]
    res = replay_sequence(seq, PriceTable.builtin())
    assert set(res.costs) == {"off", "cold", "payback", "naive", "first-party", "ceiling"}
    assert not res.errors
    assert res.costs["ceiling"] <= res.costs["off"]
    # the session re-reads one big file, so there is dead weight for the ceiling to remove
    assert res.costs["ceiling"] < res.costs["off"]
    # after the idle gap past the TTL, the cold policy cuts for free and is never worse
    assert res.costs["cold"] <= res.costs["off"] + 1e-9
    assert res.cuts["cold"] > 0


def test_replay_corpus_skip_accounting(tmp_path):
    simple_session(tmp_path / "p" / "a.jsonl", turns=5)
    (tmp_path / "p" / "bad.jsonl").write_text('{"type":"user"\nnot json\n', encoding="utf-8")
    res = replay_corpus(tmp_path, policies=["off", "cold"], prices=PriceTable.builtin())
    assert len(res.sessions) == 1
    assert res.bad_lines == 2
    assert res.skipped["no_requests"] == 1
    t = totals_for(res.sessions, "cold")
    assert t.sessions_worse == 0
    report = check_report(res.sessions)
    assert report.real_cost > 0 and report.simulated_cost > 0


def test_a_value_error_inside_one_policy_is_that_policys_error_not_the_sessions(tmp_path, monkeypatch):
    import pytest

    from scalpel_desktop.bench import replay as replay_mod

    def broken(self, k, req):
        raise ValueError("a bug inside first-party")

    monkeypatch.setattr(replay_mod.FirstPartyCuts, "__call__", broken)
    seq = read_file(simple_session(tmp_path / "s.jsonl", turns=12)).sequences[0]
    res = replay_sequence(seq, PriceTable.builtin())
    assert "ValueError" in res.errors["first-party"]
    assert res.cuts.get("naive") is not None and "cold" in res.costs  # the other policies still ran
    with pytest.raises(ValueError, match="unknown policy 'nope'"):
        replay_sequence(seq, PriceTable.builtin(), policies=["off", "nope"])
