"""surgery/doom_watch.py: from one request's analysis alone, the next request's candidates are exactly
what the full analysis finds, whenever ``may_kill`` says none of its new results killed anything."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scalpel_desktop.bench.reader import iter_sequences, read_corpus
from scalpel_desktop.bench.stage_driver import SequenceBodies
from tests.surgery.economist_shapes import APPEND_ONLY
from scalpel_desktop.surgery.doom import find_doom_spans
from scalpel_desktop.surgery.doom_watch import advance, candidates, follow, may_kill
from scalpel_desktop.surgery.testing import SessionBuilder, file_text
from scalpel_desktop.wire.formats import view_for
from tests.support import corpus_dir
from tests.surgery.test_properties import CWD, configs, play, sessions, step

AGGRESSIVE = {"tier": 2, "keep_recent": 2, "min_cut_tokens": 1, "stale_min_tokens": 50, "stale_age_messages": 4,
              "failed_age_messages": 2, "cut_mcp_results": False}


def _next_candidates(prev_doc: dict, doc: dict, config: dict):
    """(what the watch of ``prev_doc``'s analysis, following ``doc``'s new results, says ``doc``'s
    candidates are, or None when ``may_kill`` sends it to the full path; what the full analysis finds)."""
    prev = view_for("messages", prev_doc)
    find_doom_spans(prev, config)
    watch = prev.for_next["watch"]()
    msgs, n = doc["messages"], len(prev_doc["messages"])
    view = view_for("messages", doc)
    truth = find_doom_spans(view, config)
    tail = view_for("messages", {"messages": msgs[n - 1:]})
    if may_kill(watch, tail, 1, len(msgs)) is not None:
        assert follow(watch, tail, 1, len(msgs)) is None
        return None, truth
    followed = follow(watch, tail, 1, len(msgs))
    assert followed.results == len(view.tool_results)
    _next_candidates.killed += any(sp.unit_index < n - 1 <= sp.died_at_unit and sp.kind in ("superseded_read", "duplicate")
                                   for sp in truth)  # a watched result the new ones killed
    return candidates(followed, len(msgs), len(view.tool_results), ()), truth


_next_candidates.killed = 0


@pytest.mark.parametrize("config", [{"tier": 2}, {"tier": 1}, AGGRESSIVE])
def test_on_real_sessions_the_watch_knows_the_next_candidates(config):
    vouched = grew = 0
    _next_candidates.killed = 0
    for seq in iter_sequences(read_corpus(corpus_dir("transcripts"))):
        bodies = SequenceBodies(seq, {"tier": 2}, 2, markers=APPEND_ONLY)
        prev = None
        for k in range(len(seq.requests)):
            _, doc = bodies.doc(k)
            if prev is not None and len(doc["messages"]) > len(prev["messages"]) \
                    and doc["messages"][:len(prev["messages"]) - 1] == prev["messages"][:-1]:
                got, truth = _next_candidates(prev, doc, config)
                if got is not None:
                    assert got == truth, (seq.name, k)
                    vouched += 1
                    grew += len(truth) > 0
            prev = doc
    # the comparison covered real candidates, and requests whose new results killed watched ones
    assert vouched >= 300 and grew >= 50 and _next_candidates.killed >= 20, (vouched, grew, _next_candidates.killed)


@pytest.mark.parametrize("config", [{"tier": 2}, AGGRESSIVE])
def test_on_real_sessions_a_watch_advanced_request_after_request_knows_the_candidates(config):
    """``advance`` chained as a dropped conversation's turns chain it (surgery/ghost_turn.py): each
    request's candidates from the watch advanced over every request since the last full analysis."""
    chained = longest = 0
    for seq in iter_sequences(read_corpus(corpus_dir("transcripts"))):
        bodies = SequenceBodies(seq, {"tier": 2}, 2, markers=APPEND_ONLY)
        prev, watch, run = None, None, 0
        for k in range(len(seq.requests)):
            _, doc = bodies.doc(k)
            msgs = doc["messages"]
            view = view_for("messages", doc)
            truth = find_doom_spans(view, config)
            grew = prev is not None and len(msgs) > len(prev["messages"]) \
                and msgs[:len(prev["messages"]) - 1] == prev["messages"][:-1]
            if watch is not None and grew:
                tail = view_for("messages", {"messages": msgs[len(prev["messages"]) - 1:]})
                watch = advance(watch, tail, 1, len(msgs))
                if watch is not None:
                    assert candidates(watch, len(msgs), len(view.tool_results), ()) == truth, (seq.name, k)
                    assert watch.units == len(msgs) and watch.results == len(view.tool_results)
                    chained += 1
                    run += 1
                    longest = max(longest, run)
            if watch is None or not grew:
                watch, run = view.for_next["watch"](), 0  # the full analysis's own
            prev = doc
    assert chained >= 300 and longest >= 20, (chained, longest)  # long chains, not single steps


def _grown(steps) -> tuple[dict, dict]:
    s = SessionBuilder()
    s.call("Read", {"file_path": "/home/user/proj/a.py"}, file_text("a", 200))
    s.call("Read", {"file_path": "/home/user/proj/b.py"}, file_text("b", 200))
    before = s.body()
    steps(s)
    return before, s.body()


@pytest.mark.parametrize("step,why", [
    (lambda s: s.call("Bash", {"command": "cd /tmp && ls"}, "x"), "a cd"),
    (lambda s: (s.call("Bash", {"command": "false"}, file_text("err", 80), True), s.call("Glob", {"pattern": "*"}, "a")),
     "a failed result dies"),
    (lambda s: (s.call("mcp__playwright__browser_snapshot", {}, file_text("page", 80)),
                s.call("mcp__playwright__browser_snapshot", {}, file_text("page2", 80))), "another snapshot"),
])
def test_a_new_result_the_watch_cannot_follow_sends_the_request_to_the_full_path(step, why):
    before, after = _grown(step)
    prev = view_for("messages", before)
    find_doom_spans(prev, AGGRESSIVE)
    tail = view_for("messages", {"messages": after["messages"][len(before["messages"]) - 1:]})
    watch = prev.for_next["watch"]()
    assert may_kill(watch, tail, 1, len(after["messages"])) == why
    assert follow(watch, tail, 1, len(after["messages"])) is None


@pytest.mark.parametrize("step,kind", [
    (lambda s: s.call("Edit", {"file_path": "/home/user/proj/a.py", "old_string": "a", "new_string": "b"}, "ok"),
     "superseded_read"),
    (lambda s: s.call("Read", {"file_path": "/home/user/proj/a.py"}, file_text("a2", 200)), "superseded_read"),
    (lambda s: s.call("Bash", {"command": "cat /home/user/proj/a.py"}, file_text("a3", 200)), "superseded_read"),
    (lambda s: s.call("Read", {"file_path": "/home/user/proj/c.py"}, file_text("a", 200)), "duplicate"),
    (lambda s: s.call("Read", {"file_path": "/home/user/proj/a.py"}, file_text("a", 200)), "superseded_read"),
    (lambda s: (s.call("Read", {"file_path": "/home/user/proj/n.py"}, file_text("n", 200)),
                s.call("Write", {"file_path": "/home/user/proj/n.py", "content": "x"}, "ok"),
                s.call("Glob", {"pattern": "*"}, "a"), s.call("Glob", {"pattern": "*"}, "b")), "superseded_read"),
])
def test_a_watched_result_a_new_one_kills_dies_as_the_full_analysis_has_it(step, kind):
    """A new result that supersedes or repeats a watched one (or one of the new results before it):
    the followed watch's candidates are exactly the full analysis's, the death among them."""
    before, after = _grown(step)
    got, truth = _next_candidates(before, after, AGGRESSIVE)
    assert got == truth and kind in {s.kind for s in truth}
    tail = view_for("messages", {"messages": after["messages"][len(before["messages"]) - 1:]})
    prev = view_for("messages", before)
    find_doom_spans(prev, AGGRESSIVE)
    advanced = advance(prev.for_next["watch"](), tail, 1, len(after["messages"]))
    assert candidates(advanced, len(after["messages"]), advanced.results, ()) == truth


def test_a_partial_read_of_another_range_leaves_the_waiting_read_alive():
    def step(s):
        s.call("Read", {"file_path": "/home/user/proj/r.py", "offset": 10, "limit": 50}, file_text("r", 200))
        s.call("Read", {"file_path": "/home/user/proj/r.py", "offset": 100, "limit": 50}, file_text("r2", 200))
        s.call("Read", {"file_path": "/home/user/proj/r.py", "offset": 10, "limit": 50}, file_text("r3", 200))
        s.call("Glob", {"pattern": "*"}, "a")
        s.call("Glob", {"pattern": "*"}, "b")
    before, after = _grown(step)
    got, truth = _next_candidates(before, after, AGGRESSIVE)
    assert got == truth
    ids = {s.tool_use_id for s in truth if s.kind == "superseded_read"}
    assert len(ids) == 1  # the first range, read again; the other range still waits


def test_a_new_read_of_a_new_file_kills_nothing_and_age_makes_its_candidates_exactly():
    before, after = _grown(lambda s: [s.call("Read", {"file_path": f"/home/user/proj/n{i}.py"}, file_text(f"n{i}", 30))
                                      for i in range(3)])
    got, truth = _next_candidates(before, after, AGGRESSIVE)
    assert got == truth and {s.kind for s in truth} == {"stale_large"}  # the first reads aged out on the way


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(first=sessions, steps=st.lists(st.lists(step, min_size=1, max_size=6), min_size=1, max_size=6), cfg=configs,
       tier=st.sampled_from([1, 2]))
def test_on_generated_sessions_a_followed_watch_knows_the_candidates(first, steps, cfg, tier):
    """Random Claude-Code-shaped histories (re-reads, edits, writes, repeats, failures, snapshots, cat),
    grown request by request: wherever ``follow`` follows the new results, its candidates are the full
    analysis's; ``advance``, chained from the last full analysis, gives the same."""
    config = dict(cfg, tier=tier)
    b = SessionBuilder(cwd=CWD)
    play(b, first)
    prev = b.body()
    view = view_for("messages", prev)
    find_doom_spans(view, config)
    watch = chained = view.for_next["watch"]()
    for more in steps:
        play(b, more)
        doc = b.body()
        msgs, n = doc["messages"], len(prev["messages"])
        truth = find_doom_spans(view_for("messages", doc), config)
        tail = view_for("messages", {"messages": msgs[n - 1:]})
        followed = follow(watch, tail, 1, len(msgs))
        assert (followed is None) == (may_kill(watch, tail, 1, len(msgs)) is not None)
        if followed is not None:
            assert candidates(followed, len(msgs), followed.results, ()) == truth
        if chained is not None:
            chained = advance(chained, tail, 1, len(msgs))
            if chained is not None:
                assert candidates(chained, len(msgs), chained.results, ()) == truth
        view = view_for("messages", doc)
        find_doom_spans(view, config)
        watch = view.for_next["watch"]()
        if chained is None:
            chained = watch
        prev = doc
