"""The bench bills what the stage sends (issue 23): the pin a warm cut adds is a marker the simulator
bills, and a client that already sends 4 markers leaves no room for one."""

from __future__ import annotations

import pytest

from scalpel_desktop.accounting.prices import PriceTable
from scalpel_desktop.bench import client_markers, stage_driver
from scalpel_desktop.bench.reader import iter_sequences, read_corpus
from scalpel_desktop.bench.replay import replay_sequence
from scalpel_desktop.surgery.budget import RiskBudget
from tests.support import corpus_dir

PRICES = PriceTable.builtin()
# Sequences of the shared corpus where the warm policies cut when a bet is funded (issue 23's finding).
WARM = ("7acd37a8/main", "37f83ec9/main", "fe869ecb/main", "a7da6a22/main")
FUNDED = {"risk_cap_pct": 1000}


def _warm_sequences():
    return [s for s in iter_sequences(read_corpus(corpus_dir("transcripts"))) if s.name in WARM]


def _replay(seq):
    return replay_sequence(seq, PRICES, ["off", "payback"], hinted=False, ceiling=False, config=FUNDED,
                           budgets={"payback": RiskBudget(1e6)})


def test_a_client_that_sends_four_markers_gets_no_added_pin():
    # Every pinned warm cut the old bench made was in a session recorded before Claude Code 2.1, which
    # sends all 4 markers: with its real markers, no marker is added; a cut is pinned only by moving
    # the client's marker on the message before the last (surgery/pin.py), else priced at its worst case.
    cuts = 0
    for seq in _warm_sequences():
        assert client_markers.layout_for(seq.requests[0].version).markers == 4
        got = _replay(seq)
        assert not got.errors
        for w in got.warm["payback"]:
            cuts += 1
            if w["boundary"] == "pinned":
                assert w["moved_from"] is not None and w["fallback_usd"] > 0
            else:
                assert w["boundary"] == "worst-case" and "pin_tokens" not in w  # no marker added, none billed
    assert cuts >= 1


def test_a_moved_marker_is_billed_where_the_body_sent_carries_it(monkeypatch):
    # a7da6a22 (Claude Code 2.0.55, 4 markers) with the ledger history the bench gives it: request 45's
    # cut at death is pinned by the marker moved off message 89. The simulator bills that body's
    # markers: the pin's, not the client's on the message before the last, and no more than the client's.
    from scalpel_desktop.accounting.cache_model import PromptCache
    from scalpel_desktop.bench.ledger_view import history_before

    seqs = list(iter_sequences(read_corpus(corpus_dir("transcripts"))))
    seq = next(s for s in seqs if s.name == "a7da6a22/main")
    calls: list[dict] = []
    real = PromptCache.bill_detail

    def spy(self, key, blocks, now, **kw):
        if kw.get("breakpoints") is not None:
            calls.append({"now": now, "marks": dict(kw["breakpoints"])})
        return real(self, key, blocks, now, **kw)

    monkeypatch.setattr(PromptCache, "bill_detail", spy)
    got = replay_sequence(seq, PRICES, ["off", "death"], hinted=False, ceiling=False, config=FUNDED,
                          history=history_before(seqs, seq), budgets={"death": RiskBudget(1e6)})
    moved = [w for w in got.warm["death"] if w.get("moved_from") is not None]
    assert moved and not got.errors
    for w in moved:
        at = seq.requests[w["request"]].ts
        bills = [c["marks"] for c in calls if c["now"] == at]
        sent = next(m for m in bills if None in m.values())  # the arm whose body took a marker off
        client = next(m for m in bills if None not in m.values() and len(m) == len(sent) - 1)
        taken = [u for u, t in sent.items() if t is None]
        added = [u for u, t in sent.items() if t and u not in client]
        assert len(taken) == 1 and taken[0] in client and len(added) == 1  # moved: one off, one on
        assert sum(1 for t in sent.values() if t) == len(client)  # none added
        assert w["billed_read"] > 0 and w["fallback_usd"] > 0


def test_the_simulator_bills_the_pin_where_the_client_leaves_a_marker_free(monkeypatch):
    # The same sessions as if recorded by 2.1 (one marker free): each warm cut is pinned, and the
    # simulator's read stops at the pin's entry wherever the real usage shows the cache alive through it;
    # the tail it then bills from the pin to the break is no more than the economist priced (1%: the
    # per-block rounding). It may be less: content the transcript holds and the API does not count
    # (earlier thinking) is in the priced bytes (one cut here: 965 billed, 1,457 priced).
    monkeypatch.setattr(stage_driver, "layout_for", lambda version: client_markers.NEW)
    pinned = 0
    for seq in _warm_sequences():
        got = _replay(seq)
        assert not got.errors
        for w in got.warm["payback"]:
            if w["boundary"] != "pinned":
                continue
            pinned += 1
            conv = 3.3 * got.ratio.tokens_per_byte
            priced = (w["rewrite_tokens"] - w["warm_tokens"]) * conv
            if w["billed_read"] >= w["pin_tokens"]:  # the entry was alive (the real usage kept it)
                assert w["region_sim_tokens"] <= priced * 1.01 + 1, (seq.name, w["request"])
    assert pinned >= 3


@pytest.mark.parametrize("version, free", [("2.1.332", 1), ("2.0.77", 0)])
def test_the_stage_sees_the_marker_budget_of_the_wire(version, free):
    from scalpel_desktop.surgery.pin import pinnable

    seq = next(iter(_warm_sequences()))
    seq.requests[0].version = version
    bodies = stage_driver.SequenceBodies(seq, {"tier": 2}, 2)
    raw, doc = bodies.doc(5)
    assert pinnable(doc, raw)[1] == free
