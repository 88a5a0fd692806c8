"""bench/client_markers.py: the markers a replayed body carries are the ones its client version sends."""

from __future__ import annotations

import json

import pytest

from scalpel_desktop.bench.client_markers import NEW, OLD, layout_for, mark_last_block, system_blocks
from tests.support import corpus_dir


@pytest.mark.parametrize("capture, layout", [("claude-code-2.0.77", OLD), ("claude-code-2.1.332", NEW)])
def test_the_layouts_are_the_wire_captures_markers(capture, layout):
    # Checked against bodies the real CLI sent (../shared/corpus/wire), not against our own rules.
    path = corpus_dir("wire", capture) / "requests.jsonl"
    seen = 0
    for line in path.read_text().splitlines():
        body = json.loads(line)["body"]
        if not isinstance(body, dict) or len(body.get("messages") or []) < 3 or not isinstance(body.get("system"), list):
            continue
        marks = [("cache_control" in b) for b in body["system"]]
        on_msgs = [i for i, m in enumerate(body["messages"]) if isinstance(m.get("content"), list)
                   and any("cache_control" in b for b in m["content"] if isinstance(b, dict))]
        if not any(marks):
            continue  # a side request (title, topic) without markers
        assert marks[-len(layout.system_blocks):] == list(layout.system_blocks)
        n = len(body["messages"])
        assert on_msgs == ([n - 2, n - 1] if layout.previous_message else [n - 1])
        assert json.dumps(body).count('"cache_control"') == layout.markers
        seen += 1
    assert seen >= 5
    assert layout_for(json.loads(path.read_text().splitlines()[0])["headers"].get("user-agent", "x/2.1.332 ")
                      .split("/")[1].split(" ")[0]) is layout


def test_unknown_versions_take_the_newest_layout_and_thinking_is_never_marked():
    assert layout_for("") is NEW and layout_for("garbage") is NEW and layout_for("1.0.24") is OLD
    msg = {"role": "assistant", "content": [{"type": "thinking", "thinking": "t", "signature": "s"}]}
    assert mark_last_block(msg, {"type": "ephemeral"}) is msg
    text = {"role": "user", "content": [{"type": "text", "text": "hi"}]}
    marked = mark_last_block(text, {"type": "ephemeral"})
    assert marked["content"][-1]["cache_control"] == {"type": "ephemeral"} and "cache_control" not in text["content"][-1]
    assert [("cache_control" in b) for b in system_blocks(OLD, {"type": "ephemeral"})] == [True, True]
