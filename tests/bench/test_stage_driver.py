"""``bench/stage_driver.py``: the bodies the bench builds once per sequence, and the shipped stage it drives."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest

from scalpel_desktop.accounting.prices import PriceTable
from scalpel_desktop.bench.client_markers import NEW
from scalpel_desktop.bench.reader import read_file
from scalpel_desktop.bench.simulate import SequenceSimulator
from scalpel_desktop.bench.stage_driver import SequenceBodies, StageDriver, scratch_dir, stub_tokens
from scalpel_desktop.config import KEYS
from scalpel_desktop.surgery.doom import find_doom_spans
from scalpel_desktop.wire.formats import view_for
from tests.bench.transcripts import Transcript, simple_session, text, tool_use, usage

CFG = {k: v.default for k, v in KEYS.items()}
PRICES = PriceTable.builtin()
BIG = "x = 1\n" * 3000


def broken_cache(tmp_path: Path, w1: bool = False, version: str = "2.1.332"):
    """Three requests; the third reads only the first request's prompt back (a break the bytes do not show)."""
    tr = Transcript(version=version)
    tr.user("hi")
    tr.response([text("Reading."), tool_use("toolu_0")], usage(w1=10_000) if w1 else usage(w5=10_000))
    tr.result("toolu_0", BIG)
    tr.response([text("again"), tool_use("toolu_1")], usage(read=10_000, w5=6_000))
    tr.result("toolu_1", BIG)
    tr.response([text("done")], usage(read=10_000, w5=12_000))
    return read_file(tr.write(tmp_path / "s.jsonl")).sequences[0]


@pytest.mark.parametrize("version, system, previous", [("2.1.332", [False, True, True], False),
                                                       ("2.1.17", [False, True, True], False),
                                                       ("2.0.77", [True, True], True), ("1.0.24", [True, True], True),
                                                       ("", [False, True, True], False)])
def test_the_body_carries_its_client_versions_markers_and_leaves_the_transcript_alone(tmp_path, version, system,
                                                                                        previous):
    # As the wire captures show (../shared/corpus/wire): 2.1.332 marks two of three system blocks and
    # the last message (3 markers, one free for a pin); 2.0.77 marks two system blocks and the last
    # two messages (4: none free).
    seq = broken_cache(tmp_path, version=version)
    bodies = SequenceBodies(seq, CFG, 2)
    raw, doc = bodies.doc(1)
    assert json.loads(raw) == doc
    assert [m["role"] for m in doc["messages"]] == ["user", "assistant", "user"]
    marked = [b for m in doc["messages"] for b in m["content"] if "cache_control" in b]
    want = [doc["messages"][-2]["content"][-1]] * previous + [doc["messages"][-1]["content"][-1]]
    assert marked == want
    assert ["cache_control" in b for b in doc["system"]] == system
    assert raw.count(b'"cache_control"') == (4 if previous else 3)
    assert marked[0]["cache_control"] == {"type": "ephemeral"} == doc["system"][-1]["cache_control"]
    assert json.loads(doc["metadata"]["user_id"]) == {"session_id": seq.session_id}
    assert doc["model"] == seq.requests[1].model and doc["stream"] is True
    assert not any("cache_control" in b for ln in seq.requests[1].history for b in ln.blocks)


def test_the_marker_takes_the_ttl_of_the_latest_cache_write_in_the_usage(tmp_path):
    bodies = SequenceBodies(broken_cache(tmp_path, w1=True), CFG, 2)  # writes: 1h, then 5m, 5m
    markers = [bodies.doc(k)[1]["messages"][-1]["content"][-1]["cache_control"] for k in range(3)]
    assert markers == [{"type": "ephemeral", "ttl": "1h"}, {"type": "ephemeral"}, {"type": "ephemeral"}]


def test_messages_shared_with_the_previous_request_are_the_same_objects(tmp_path):
    bodies = SequenceBodies(broken_cache(tmp_path), CFG, 2)
    one, two = bodies.doc(1)[1]["messages"], bodies.doc(2)[1]["messages"]
    assert one[0] is two[0] and one[1] is two[1]
    assert one[2] is not two[2]  # the last message carries this request's marker: a copy


def test_doom_spans_are_memoised_and_equal_a_fresh_analysis(tmp_path):
    seq = read_file(simple_session(tmp_path / "s.jsonl", turns=8)).sequences[0]
    bodies = SequenceBodies(seq, CFG, 2)
    for k in range(len(seq.requests)):
        got = bodies.spans(k)
        assert bodies.spans(k) is got
        fresh = find_doom_spans(view_for("messages", json.loads(bodies.doc(k)[0])), CFG, tier=2)
        assert [(s.tool_use_id, s.kind) for s in got] == [(s.tool_use_id, s.kind) for s in fresh]
    assert any(bodies.spans(k) for k in range(len(seq.requests)))


def test_rewrite_at_names_the_message_where_the_real_read_stopped(tmp_path):
    seq = broken_cache(tmp_path)
    sim = SequenceSimulator(seq, PRICES)
    d = StageDriver(seq, "cold", 2, PRICES, CFG, sim, SequenceBodies(seq, CFG, 2))
    try:
        # request 1 read all of request 0; request 2 read only request 0's prompt: the break
        # is at message 1, the assistant turn that request 1 added
        assert [d.rewrite_at(k, r) for k, r in enumerate(seq.requests)] == [None, None, 1]
    finally:
        d.close()


def drive(seq, scratch=None, hints=True):
    sim = SequenceSimulator(seq, PRICES)
    d = StageDriver(seq, "cold", 2, PRICES, CFG, sim, SequenceBodies(seq, CFG, 2), hints=hints, scratch=scratch)
    arm = sim.arm(d.cuts_for, after=d.after)
    seen = []
    for k in range(len(seq.requests)):
        arm.step(k)
        seen.append(dict(d.cuts))
    return d, seen


def test_the_stage_cuts_after_an_idle_gap_and_keeps_one_stub_per_result(tmp_path):
    seq = read_file(simple_session(tmp_path / "s.jsonl", turns=30, gap_at=25, gap=4000.0, big=30_000)).sequences[0]
    d, seen = drive(seq)
    try:
        assert d.cuts, "the cold policy cuts dead reads once the cache has gone cold"
        assert all(not c for c in seen[:25])  # nothing before the gap: the cache was warm
        tid, stub = next(iter(d.cuts.items()))
        assert stub.key == "stage:" + tid and stub.tokens == d.stub
        assert all(c[tid] is stub for c in seen if tid in c)  # the same Stub request after request
        rows = d.conn.execute("SELECT COUNT(*) FROM cuts").fetchone()[0]
        assert rows == len(d.cuts)  # the stage's own cut log, in memory
        # its ids, known without a first query (it started empty), are the table's
        assert d.stage.cutlog._known() == {r[0] for r in d.conn.execute("SELECT tool_use_id FROM cuts")} == set(d.cuts)
        tmp = Path(d.tmp)
        assert tmp.is_dir()
    finally:
        d.close()
    assert not tmp.exists()  # its own scratch dir goes with it


def test_a_shared_scratch_dir_outlives_the_driver(tmp_path):
    seq = read_file(simple_session(tmp_path / "s.jsonl", turns=4)).sequences[0]
    shared = tmp_path / "scratch"
    shared.mkdir()
    d, _ = drive(seq, scratch=str(shared))
    d.close()
    assert shared.is_dir()


def test_a_subagents_requests_carry_its_agent_id(tmp_path):
    seq = dataclasses.replace(broken_cache(tmp_path), kind="subagent", agent_id="a1b2")
    d, _ = drive(seq)
    d.close()
    assert d.headers == {"x-claude-code-session-id": seq.session_id, "x-claude-code-agent-id": "a1b2"}


def test_scratch_dir_and_stub_size(tmp_path):
    path = Path(scratch_dir())
    try:
        assert path.is_dir() and path.name.startswith("scalpel-bench-")
        if os.access("/dev/shm", os.W_OK):
            assert path.parent == Path("/dev/shm")
    finally:
        path.rmdir()
    sim = SequenceSimulator(broken_cache(tmp_path), PRICES)
    assert 0 < stub_tokens(sim) < sim.stub_tokens(len(BIG)) / 20


@pytest.mark.parametrize("hints", [True, False])
def test_without_hints_the_stage_never_hears_of_the_inferred_break(tmp_path, hints, monkeypatch):
    seq = broken_cache(tmp_path)
    told = []
    from scalpel_desktop.surgery.stage import SurgeryStage

    real = SurgeryStage.on_request
    monkeypatch.setattr(SurgeryStage, "on_request",
                        lambda self, ex: (told.append(getattr(ex, "client_rewrite_at", None)), real(self, ex))[1])
    d, _ = drive(seq, hints=hints)
    d.close()
    assert told == ([None, None, 1] if hints else [None, None, None])


def test_each_body_is_laid_out_once_for_every_arm_as_a_fresh_layout_would_lay_it_out(tmp_path):
    from scalpel_desktop.wire.layout import locate

    seq = read_file(simple_session(tmp_path / "s.jsonl", turns=8)).sequences[0]
    bodies = SequenceBodies(seq, CFG, 2, markers=NEW)  # (a pre-2.1 client moves a marker: less to reuse)
    reused = 0
    for k in range(len(seq.requests)):
        layout, base = bodies.layout(k)
        assert bodies.layout(k)[0] is layout  # the same object for every arm
        body, doc = bodies.doc(k)
        fresh = locate(body, doc, None)
        assert (layout.ends, layout.sizes, layout.hashes) == (fresh.ends, fresh.sizes, fresh.hashes)
        if k and len(bodies.layout(k - 1)[0].ends) >= 2:  # the previous body's head repeats here
            # it re-used the previous body, as the proxy's parse-reuse would hand it over
            assert layout.reused == len(bodies.layout(k - 1)[0].ends) - 1 and base is bodies.doc(k - 1)[0]
            reused += 1
    assert reused >= len(seq.requests) - 2


def test_messages_are_built_incrementally_as_a_fresh_build_would_build_them(tmp_path):
    seq = read_file(simple_session(tmp_path / "s.jsonl", turns=10)).sequences[0]
    bodies = SequenceBodies(seq, CFG, 2)
    for k in range(len(seq.requests)):
        got = bodies.doc(k)[1]["messages"]
        fresh = SequenceBodies(seq, CFG, 2).doc(k)[1]["messages"]
        assert got == fresh
    rewound = dataclasses.replace(seq.requests[3], history=seq.requests[3].history[:2])  # a shorter history
    assert bodies._messages(rewound) == SequenceBodies(seq, CFG, 2)._messages(rewound)


def test_each_body_is_its_documents_compact_json_though_its_messages_are_serialized_once():
    from scalpel_desktop.bench.reader import iter_sequences, read_corpus
    from scalpel_desktop.wire.jsoncodec import dumps
    from tests.support import corpus_dir

    seqs = [s for s in iter_sequences(read_corpus(corpus_dir("transcripts", "claude-code-log",
                                                             "-Users-dain-workspace-JSSoundRecorder")))
            if len(s.requests) >= 2]
    checked = reused = 0
    for seq in seqs:
        bodies = SequenceBodies(seq, CFG, 2)
        for k in range(len(seq.requests)):
            raw, doc = bodies.doc(k)
            assert raw == dumps(doc)
            checked += 1
        reused += len(bodies._msg_bytes)
    assert checked > 20 and reused > 0  # the bytes of earlier requests' messages were taken
