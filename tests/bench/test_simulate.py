from __future__ import annotations

from scalpel_desktop.accounting.prices import PriceTable
from scalpel_desktop.bench.reader import iter_sequences, read_corpus, read_file
from scalpel_desktop.bench.simulate import SequenceSimulator, Stub
from tests.bench.transcripts import simple_session
from tests.support import corpus_dir


def _seq(tmp_path, **kw):
    return read_file(simple_session(tmp_path / "s.jsonl", **kw)).sequences[0]


def test_prefix_is_inferred_from_the_first_request(tmp_path):
    seq = _seq(tmp_path)
    sim = SequenceSimulator(seq, PriceTable.builtin(), mode="check")
    first = seq.requests[0]
    assert 0 < sim.prefix_tokens < first.usage.prompt_tokens
    bill = sim.run()
    assert bill.requests[0].sim_cost == bill.requests[0].real_cost  # the calibration point


def test_warm_turns_read_and_an_idle_gap_rewrites(tmp_path):
    warm = SequenceSimulator(_seq(tmp_path), PriceTable.builtin(), mode="check").run()
    for r in warm.requests[1:]:
        assert r.sim.cache_read > 0
    cold_dir = tmp_path / "cold"
    cold = SequenceSimulator(_seq(cold_dir, gap_at=3, gap=900.0), PriceTable.builtin(), mode="check").run()
    assert cold.requests[3].sim.cache_read == 0
    assert cold.requests[3].sim.cache_write >= cold.requests[2].tokens
    assert cold.sim_cost > warm.sim_cost


def test_cut_before_the_end_rewrites_and_free_cut_does_not(tmp_path):
    seq = _seq(tmp_path, turns=8)
    sim = SequenceSimulator(seq, PriceTable.builtin(), mode="replay")
    base = sim.run()
    stub = Stub("s", 20)
    cut_at = 4  # from request 4 on, toolu_0's big result is stubbed

    def cuts(k, req):
        return {"toolu_0": stub} if k >= cut_at else {}

    paid = sim.run(cuts)
    free = sim.run(cuts, free=True)
    # the keyed cut re-writes everything after the stub once, then reads less every turn
    assert paid.requests[cut_at].sim.cache_write > base.requests[cut_at].sim.cache_write
    assert paid.requests[-1].tokens < base.requests[-1].tokens
    # the free cut never writes more than the baseline and costs less in total
    for a, b in zip(free.requests, base.requests):
        assert a.sim.cache_write <= b.sim.cache_write
    assert free.sim_cost < base.sim_cost


def test_incremental_builder_matches_a_fresh_one(tmp_path):
    """Billing with the incremental block list equals billing each request from scratch."""
    from scalpel_desktop.accounting.cache_model import PrefixBuilder, PromptCache

    seq = _seq(tmp_path, turns=7)
    sim = SequenceSimulator(seq, PriceTable.builtin(), mode="replay")
    inc = sim.run()
    cache = PromptCache()
    for k, req in enumerate(seq.requests):
        keys, roles, tokens = sim.units(k, None)
        pb = PrefixBuilder()
        for j in range(len(keys)):
            role = roles[j] if j == 0 or roles[j] != roles[j - 1] else None
            pb.add_raw(repr(keys[j]).encode(), tokens[j], None, new_message_role=role)
        usage = cache.bill(req.model, pb.blocks, req.ts, breakpoints=sim._marks(roles, "5m"))
        if k:
            assert (usage.cache_read, usage.cache_write) == (inc.requests[k].sim.cache_read, inc.requests[k].sim.cache_write)


def test_replay_baseline_tracks_the_real_bill_on_the_corpus():
    """With the client's breaks taken from the real usage, the unmodified replay is close to the bill."""
    prices = PriceTable.builtin()
    real = sim = 0.0
    breaks = 0
    for seq in iter_sequences(read_corpus(corpus_dir("transcripts"))):
        if len(seq.requests) < 2:
            continue
        bill = SequenceSimulator(seq, prices, mode="replay").run(detect_breaks=True)
        real += bill.real_cost
        sim += bill.sim_cost
        breaks += bill.breaks_used
    assert breaks > 0
    assert abs(sim - real) / real < 0.05


def test_the_check_is_within_its_target_on_the_corpus():
    """Content, timestamps and the FIRST request's usage only: within 5% of the real bill."""
    from scalpel_desktop.bench.check import TARGET_PCT

    prices = PriceTable.builtin()
    real = sim = 0.0
    for seq in iter_sequences(read_corpus(corpus_dir("transcripts"))):
        if len(seq.requests) < 2:
            continue
        bill = SequenceSimulator(seq, prices, mode="check").run()
        real += bill.real_cost
        sim += bill.sim_cost
    assert real > 0
    assert abs(sim - real) / real * 100 <= TARGET_PCT
