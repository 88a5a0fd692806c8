"""find_doom_spans (tuned) answers exactly as the plain form of the rules (doom_reference.py).

Over generated sessions (fresh views, and views that re-use the previous
request's analysis as parse-reuse does), every captured real body, and real
Claude Code 2.1.332 conversations grown as benchmarks/overhead/bodies.py grows them.
"""

from __future__ import annotations

import copy
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scalpel_desktop.surgery.doom import find_doom_spans
from scalpel_desktop.surgery.testing import SessionBuilder
from scalpel_desktop.wire.formats import view_for
from tests.support import REPO, corpus_dir
from tests.surgery.doom_reference import reference_doom_spans
from tests.surgery.test_properties import CWD, configs, play, sessions, step
from tests.surgery.test_real_bodies import AGGRESSIVE
from tests.wire.test_view import corpus_bodies

CONFIGS = [None, AGGRESSIVE, dict(AGGRESSIVE, cut_mcp_results=True),
           {"keep_recent": 2, "failed_age_messages": 3, "stale_age_messages": 10, "stale_min_tokens": 100}]


def same(view, cfg, tier=None) -> list:
    got = find_doom_spans(view, cfg, tier=tier)
    assert got == reference_doom_spans(view, cfg, tier=tier)
    return got


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(first=sessions, second=st.lists(step, min_size=1, max_size=15), cfg=configs, tier=st.sampled_from([1, 2]))
def test_same_spans_on_generated_sessions(first, second, cfg, tier):
    b = SessionBuilder(cwd=CWD)
    play(b, first)
    doc1 = b.body()
    v1 = view_for("messages", doc1)
    same(v1, cfg, tier)
    play(b, second)
    doc2 = b.body()
    doc2["messages"][: len(doc1["messages"])] = doc1["messages"]  # the same objects, as parse-reuse shares them
    v2 = view_for("messages", doc2, previous=v1)
    same(v2, cfg, tier)
    fresh = view_for("messages", copy.deepcopy(doc2))  # and from scratch
    same(fresh, cfg, tier)
    assert v2.reused_units > 0
    assert [(r.id, r.unit_index, r.understood) for r in v2.tool_results] == \
        [(r.id, r.unit_index, r.understood) for r in fresh.tool_results]
    assert v2._result_pos == fresh._result_pos


def test_same_spans_on_every_captured_body():
    corpus_dir("wire")
    seen = 0
    for name, doc in corpus_bodies():
        endpoint = "messages" if "messages" in doc else "responses"
        try:
            view = view_for(endpoint, doc)
        except Exception:
            continue
        for cfg in CONFIGS:
            for tier in (None, 1, 2):
                seen += len(same(view, cfg, tier))
    assert seen > 0  # some bodies did have dead results


@pytest.mark.parametrize("growth", ["real", "reads"])
def test_same_spans_on_grown_real_conversations(growth):
    corpus_dir("wire")
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    from benchmarks.overhead.bodies import Conversation, load_capture

    conv = Conversation.__new__(Conversation)
    conv.growth = growth
    conv.__init__(load_capture(), 400_000, "doomfast")
    prev = None
    for turn in range(4):  # a growing conversation: each view re-uses the last one's analysis
        doc = conv.doc if prev is None else dict(conv.doc, messages=list(conv.doc["messages"]))
        view = view_for("messages", doc, previous=prev)
        for cfg in CONFIGS:
            same(view, cfg)
        prev = view
        conv.add_turn()


def test_a_resumed_scan_agrees_where_a_result_s_call_appears_only_later():
    """A result with no call before it (a body no API would take, but one the proxy may be shown)
    whose call turns up in a later message: a view names a result from the calls before it, so it
    stays nameless and uncut, and the scan resumed over it answers as the reference does."""
    def result(tid, text):
        return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tid, "content": text}]}

    def use(tid, path):
        return {"role": "assistant", "content": [{"type": "tool_use", "id": tid, "name": "Read",
                                                  "input": {"file_path": path}}]}

    big = "x = 1\n" * 400
    msgs = [{"role": "user", "content": "go"}, result("toolu_a", big), {"role": "assistant", "content": "ok"},
            {"role": "user", "content": "more"}]
    v1 = view_for("messages", {"model": "m", "messages": msgs})
    same(v1, CONFIGS[3])
    later = msgs + [use("toolu_a", "/p/f.py"), result("toolu_b", big), use("toolu_c", "/p/f.py"),
                    result("toolu_c", big + "y"), {"role": "user", "content": "next"}]
    v2 = view_for("messages", {"model": "m", "messages": later}, previous=v1)
    assert v2.reused_units > 0
    same(v2, CONFIGS[3])
