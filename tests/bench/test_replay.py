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
                              "death:hinted", "payback:hinted", "keepalive", "as-5m"}
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


# A slice of the shared corpus that exercises what the replay shares across its arms: stage
# cuts and their validated rewrites, sequences with and without breaks the usage hints at.
SHARING_SLICE = (
    "claude-code-log/-Users-dain-workspace-claude-code-log-sample/fe869ecb-c176-478f-9734-7e4b8ef12cff.jsonl",
    "claude-code-log/-Users-dain-workspace-JSSoundRecorder/7acd37a8-2745-4b58-a8a9-46164b22ad9e.jsonl",
    "claude-code-log/-Users-dain-workspace-claude-code-log-sample/12a546d1-83a7-49a6-abba-5400db340b43.jsonl",
    "claude-code-viewer/5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl",
)


@pytest.mark.parametrize("tier", [2, 1])
def test_sharing_each_bodys_analysis_across_the_arms_changes_no_figure(tier):
    import dataclasses

    from scalpel_desktop.bench.simulate import SequenceSimulator
    from scalpel_desktop.bench.stage_driver import rewrite_hints
    from tests.support import corpus_dir

    root = corpus_dir("transcripts")
    files = [read_file(root / p) for p in SHARING_SLICE]
    prices = PriceTable.builtin()
    shared = replay_corpus(files=files, tier=tier, prices=prices)
    alone = replay_corpus(files=files, tier=tier, prices=prices, share=False)
    assert [dataclasses.asdict(s) for s in shared.sessions] == [dataclasses.asdict(s) for s in alone.sessions]
    for a, b in zip(shared.sessions, alone.sessions):  # the same arms, reported in the same order
        assert list(a.costs) == list(b.costs) and list(a.cuts) == list(b.cuts) and list(a.errors) == list(b.errors)
    # the slice has what is shared: stage cuts, and sequences whose hinted arms are (and are not) their plain arms
    assert sum(s.cuts.get(p, 0) for s in shared.sessions for p in ("cold", "death", "payback")) > 0
    seqs = [q for f in files for q in f.sequences if len(q.requests) >= 2]
    hinted = [any(h is not None for h in rewrite_hints(SequenceSimulator(q, prices))) for q in seqs]
    assert any(hinted) and not all(hinted)


def test_a_hinted_arm_told_no_break_is_its_plain_arm_even_where_that_arm_fails(tmp_path, monkeypatch):
    from scalpel_desktop.bench import stage_driver
    from scalpel_desktop.bench.simulate import SequenceSimulator

    seq = read_file(simple_session(tmp_path / "s.jsonl", turns=12)).sequences[0]
    prices = PriceTable.builtin()
    assert not any(h is not None for h in stage_driver.rewrite_hints(SequenceSimulator(seq, prices)))
    hinted_steps = []
    real = stage_driver.StageDriver.cuts_for

    def spied(self, k, req):
        hinted_steps.append(self.hints)
        if self.stage.config["policy"] == "death" and k == 3:
            raise RuntimeError("a bug inside death")
        return real(self, k, req)

    monkeypatch.setattr(stage_driver.StageDriver, "cuts_for", spied)
    shared = replay_sequence(seq, prices)
    assert True not in hinted_steps  # no hinted stage arm ran: each is its plain arm
    hinted_steps.clear()
    alone = replay_sequence(seq, prices, share=False)
    assert True in hinted_steps
    # (the keeper arm runs the default policy's stage, death, beside its pings: it fails with it)
    assert list(shared.errors) == list(alone.errors) == ["death", "death:hinted", "keepalive"]
    assert shared.errors == alone.errors
    assert shared.costs == alone.costs and list(shared.costs) == list(alone.costs)
    assert shared.cuts == alone.cuts and list(shared.cuts) == list(alone.cuts)


def test_the_ledger_before_a_sequence_holds_the_sequences_that_ended_before_it_started():
    from scalpel_desktop.bench.reader import iter_sequences, read_corpus
    from scalpel_desktop.bench.replay import history_before, ledger_facts
    from scalpel_desktop.surgery.remaining import History
    from scalpel_desktop.wire.cache_rules import overrun
    from tests.support import corpus_dir

    seqs = [s for s in iter_sequences(read_corpus(corpus_dir("transcripts", "claude-code-log"))) if s.requests]
    facts = ledger_facts(seqs)
    nonempty = 0
    for seq in seqs:
        before = [o for o in seqs if o is not seq and o.requests[-1].ts_done < seq.requests[0].ts]
        want = History.of([len(o.requests) for o in before],
                          [max(0.0, b.ts - a.ts_done) for o in before for a, b in zip(o.requests, o.requests[1:])],
                          overruns=[x for o in before for a, b in zip(o.requests, o.requests[1:])
                                    if (x := overrun(b.ts - a.ts_done,
                                                     3600.0 if any(r.usage.cache_write_1h for r in o.requests) else 300.0,
                                                     a.usage.cache_read, b.usage.cache_read)) is not None])
        assert history_before(seqs, seq, facts) == want == history_before(seqs, seq)
        nonempty += bool(before)
    assert 0 < nonempty < len(seqs)  # some sequences start with a ledger behind them, the first do not
