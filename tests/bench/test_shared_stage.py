"""``bench/shared_stage.py``: what depends on a body alone, found once for every stage arm."""

from __future__ import annotations

import pytest

from scalpel_desktop.accounting.prices import PriceTable
from scalpel_desktop.bench.reader import read_file
from scalpel_desktop.bench.simulate import SequenceSimulator
from scalpel_desktop.bench.stage_driver import SequenceBodies, StageDriver
from scalpel_desktop.config import KEYS
from scalpel_desktop.wire.formats import view_for
from tests.bench.transcripts import simple_session

CFG = {k: v.default for k, v in KEYS.items()}
PRICES = PriceTable.builtin()


def _counting(monkeypatch, module, name):
    calls = []
    real = getattr(module, name)
    monkeypatch.setattr(module, name, lambda *a, **kw: (calls.append(1), real(*a, **kw))[1])
    return calls


@pytest.mark.parametrize("policy", ["cold", "death"])
def test_two_arms_of_one_policy_share_each_bodys_shape_and_rewrite_verdicts(tmp_path, monkeypatch, policy):
    from scalpel_desktop.surgery import pin, validate

    seq = read_file(simple_session(tmp_path / "s.jsonl", turns=30, gap_at=25, gap=4000.0, big=30_000)).sequences[0]

    scratch = tmp_path / "scratch"  # shared, as in the replay: the stubs name the same spill dir
    scratch.mkdir()

    def run(share):
        sim = SequenceSimulator(seq, PRICES)
        bodies = SequenceBodies(seq, CFG, 2, share=share)
        drivers = [StageDriver(seq, policy, 2, PRICES, CFG, sim, bodies, scratch=str(scratch)) for _ in range(2)]
        arms = [sim.arm(d.cuts_for, after=d.after) for d in drivers]
        try:
            bills = [[arm.step(k).sim_cost for arm in arms] for k in range(len(seq.requests))]
        finally:
            for d in drivers:
                d.close()
        return bills, [dict(d.cuts) for d in drivers]

    from scalpel_desktop.surgery import offsets
    from scalpel_desktop.wire import view as view_mod

    verdicts = _counting(monkeypatch, validate, "rewrite_problem")
    pinnable = _counting(monkeypatch, pin, "pinnable")
    scans = _counting(monkeypatch, offsets, "first_result_offsets")
    bodies = _counting(monkeypatch, view_mod.ConversationView, "serialize")
    from scalpel_desktop.surgery import stage as stage_mod

    monkeypatch.setattr(stage_mod, "pinnable", pin.pinnable)
    monkeypatch.setattr(stage_mod, "rewrite_problem", validate.rewrite_problem)
    monkeypatch.setattr(stage_mod.SurgeryStage, "_rewrite_problem", staticmethod(validate.rewrite_problem))
    monkeypatch.setattr(stage_mod.SurgeryStage, "_serialize", staticmethod(view_mod.ConversationView.serialize))
    alone = run(False)
    n_alone, p_alone, s_alone, b_alone = len(verdicts), len(pinnable), len(scans), len(bodies)
    for calls in (verdicts, pinnable, scans, bodies):
        calls.clear()
    shared = run(True)
    assert shared == alone  # the same bills request by request, the same cuts
    assert alone[1][0], "the arms cut (so their rewrites were validated)"
    assert 0 < len(verdicts) and 2 * len(verdicts) == n_alone  # the second arm's rewrites: the first's verdicts
    assert 0 < len(bodies) and 2 * len(bodies) == b_alone  # ... and the first's bytes
    assert 0 < len(scans) and 2 * len(scans) == s_alone  # ... and where their stubs sit
    if policy == "death":  # a warm policy's shape reads the pinnable blocks of the body
        assert 0 < len(pinnable) and 2 * len(pinnable) == p_alone


def test_a_rewritten_body_is_named_by_what_it_replaced_whatever_the_order(tmp_path):
    from scalpel_desktop.bench.shared_stage import replacements

    seq = read_file(simple_session(tmp_path / "s.jsonl", turns=6, big=3_000)).sequences[0]
    doc = SequenceBodies(seq, CFG, 2).doc(len(seq.requests) - 1)[1]
    ids = [r.id for r in view_for("messages", doc).tool_results][:2]
    assert len(ids) == 2
    a, b, c = (view_for("messages", doc) for _ in range(3))
    for tid in ids:
        a.replace_result_content(tid, "stub " + tid)
    for tid in reversed(ids):
        b.replace_result_content(tid, "stub " + tid)
    c.replace_result_content(ids[0], "stub " + ids[0])
    c.replace_result_content(ids[1], [{"type": "text", "text": "stub " + ids[1]}])
    assert replacements(a) == replacements(b) and a.serialize() == b.serialize()
    assert replacements(c) != replacements(a) and c.serialize() != a.serialize()


def test_an_arms_shape_is_the_shared_one_with_its_own_fields_as_replace_would_make_it():
    import dataclasses

    from scalpel_desktop.bench.shared_stage import _with
    from scalpel_desktop.surgery.plan import RequestShape

    assert not hasattr(RequestShape, "__post_init__") and "__slots__" not in vars(RequestShape)  # what _with assumes
    shared = RequestShape(key=("s", "a"), model="m", at=1.0, unit_hashes=(b"x",), unit_tokens=[3], free_markers=2)
    mine = {"key": ("t", "b"), "model": "n", "unit_hashes": (b"y", b"z"), "rewrite_at": 4}
    got = _with(shared, **mine)
    assert got == dataclasses.replace(shared, **mine) and got != shared
    with pytest.raises(dataclasses.FrozenInstanceError):
        got.model = "o"  # still frozen
