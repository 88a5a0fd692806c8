from __future__ import annotations

import pytest

from scalpel_desktop.accounting.prices import PriceTable
from scalpel_desktop.bench.check import check_report
from scalpel_desktop.bench.reader import read_file
from scalpel_desktop.bench.replay import replay_corpus, replay_sequence, totals_for
from tests.bench.transcripts import simple_session


def test_replay_sequence_runs_every_policy_its_hinted_arm_and_the_ceiling(tmp_path):
    seq = read_file(simple_session(tmp_path / "s.jsonl", turns=30, gap_at=25, gap=4000.0, big=30_000)).sequences[0]
    res = replay_sequence(seq, PriceTable.builtin())
    assert set(res.costs) == {"off", "cold", "death", "payback", "naive", "first-party", "ceiling", "cold:hinted",
                              "death:hinted", "payback:hinted", "keepalive", "as-5m", "as-5m+keepalive"}
    assert not res.errors
    assert res.costs["ceiling"] < res.costs["off"]  # the session re-reads one big file: dead weight
    # after the idle gap past the TTL the cold policy cuts for free, never worse; the gap is visible
    # from the timestamps alone, so the cut needs no hint: all of it is proven
    assert res.cuts["cold"] > 0
    assert res.cost("cold") < res.real_cost
    assert res.cost("cold:hinted") == pytest.approx(res.cost("cold"))


def test_a_policy_is_priced_on_the_real_bill(tmp_path):
    seq = read_file(simple_session(tmp_path / "s.jsonl", turns=20, gap_at=15, gap=900.0)).sequences[0]
    res = replay_sequence(seq, PriceTable.builtin())
    # the baseline IS the real bill; a policy moves it by its simulated difference
    assert res.cost("off") == res.real_cost
    assert res.cost("cold") == pytest.approx(res.real_cost + res.costs["cold"] - res.costs["off"])
    t = totals_for([res], "cold")
    assert t.saving_usd == pytest.approx(res.costs["off"] - res.costs["cold"])
    assert t.saving_pct == pytest.approx(100 * t.saving_usd / res.real_cost)


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
    from scalpel_desktop.bench import replay as replay_mod

    def broken(self, k, req):
        raise ValueError("a bug inside first-party")

    monkeypatch.setattr(replay_mod.FirstPartyCuts, "__call__", broken)
    seq = read_file(simple_session(tmp_path / "s.jsonl", turns=12)).sequences[0]
    res = replay_sequence(seq, PriceTable.builtin())
    assert "ValueError" in res.errors["first-party"]
    assert res.cuts.get("naive") is not None and "cold" in res.costs  # the other policies still ran
    assert res.cost("first-party") == res.real_cost
    with pytest.raises(ValueError, match="unknown policy 'nope'"):
        replay_sequence(seq, PriceTable.builtin(), policies=["off", "nope"])


def test_shared_doom_analysis_equals_each_arms_own(monkeypatch):
    """The bench analyses each body once for every arm: the same figures as each arm's own analysis."""
    from scalpel_desktop.bench import stage_driver
    from scalpel_desktop.bench.reader import iter_sequences, read_corpus
    from scalpel_desktop.surgery.doom import find_doom_spans
    from tests.support import corpus_dir

    prices = PriceTable.builtin()
    seqs = [s for s in iter_sequences(read_corpus(corpus_dir("transcripts", "claude-code-log",
                                                             "-Users-dain-workspace-JSSoundRecorder")))
            if len(s.requests) >= 2]
    shared = [replay_sequence(s, prices, policies=["off", "cold", "payback"], ceiling=False) for s in seqs]
    monkeypatch.setattr(stage_driver.StageDriver, "_spans",
                        lambda self, view, config=None, tier=None: find_doom_spans(view, config, tier=tier))
    own = [replay_sequence(s, prices, policies=["off", "cold", "payback"], ceiling=False) for s in seqs]
    assert any(a.cuts.get("cold") for a in shared)
    assert [(a.costs, a.cuts) for a in shared] == [(b.costs, b.cuts) for b in own]
