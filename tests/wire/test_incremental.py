"""Re-using the previous request's parse and analysis gives exactly what a fresh parse gives."""

from __future__ import annotations

import copy

from hypothesis import given, settings
from hypothesis import strategies as st

from scalpel_desktop.surgery.doom import find_doom_spans
from scalpel_desktop.surgery.testing import SessionBuilder, file_text
from scalpel_desktop.wire import jsoncodec
from scalpel_desktop.wire.incremental import parse_body
from scalpel_desktop.wire.view import view_for


def same_view(a, b):
    assert [(u.index, u.role, jsoncodec.dumps(u.raw)) for u in a.units] == [(u.index, u.role, jsoncodec.dumps(u.raw)) for u in b.units]
    assert a.tool_calls == b.tool_calls
    assert [(r.id, r.unit_index, r.block_index, r.name, r.text, r.is_error, r.understood) for r in a.tool_results] == [
        (r.id, r.unit_index, r.block_index, r.name, r.text, r.is_error, r.understood) for r in b.tool_results]
    assert a.unit_hashes() == b.unit_hashes() and a.unit_sizes() == b.unit_sizes()
    assert find_doom_spans(a, {"keep_recent": 0}, 2) == find_doom_spans(b, {"keep_recent": 0}, 2)


def turn(b: SessionBuilder, i: int) -> None:
    if i % 3 == 0:
        b.call("Read", {"file_path": f"/home/user/proj/f{i % 4}.py"}, file_text(f"f{i}", 40))
    elif i % 3 == 1:
        b.calls([("Bash", {"command": "ls"}, "a\nb\n" * 60, False), ("Edit", {"file_path": f"/home/user/proj/f{i % 4}.py"}, "ok", None)])
    else:
        b.text(f"note {i}")


def test_append_only_conversation_reuses_all_but_the_last_message():
    b = SessionBuilder()
    turn(b, 0)
    prev = parse_body(jsoncodec.dumps(b.body()))
    prev_view = view_for("messages", prev.doc)
    prev_view.unit_hashes()
    for i in range(1, 12):
        turn(b, i)
        raw = jsoncodec.dumps(b.body())
        got = parse_body(raw, prev)
        assert got.doc == jsoncodec.loads(raw) and jsoncodec.dumps(got.doc) == raw
        assert got.reused_messages == len(prev.doc["messages"]) - 1  # the last one carried the marker
        v = view_for("messages", got.doc, previous=prev_view)
        assert v.reused_units == got.reused_messages
        same_view(v, view_for("messages", jsoncodec.loads(raw)))
        prev, prev_view = got, v


def test_rewrites_in_the_middle_and_other_keys():
    b = SessionBuilder()
    for i in range(9):
        turn(b, i)
    body = b.body()
    prev = parse_body(jsoncodec.dumps(body))
    changed = copy.deepcopy(body)
    changed["messages"][4]["content"][0]["text"] = "rewritten by the client"
    changed["model"] = "claude-haiku"  # the head differs: no re-use at all
    got = parse_body(jsoncodec.dumps(changed), prev)
    assert got.reused_messages == 0 and got.doc == changed
    changed["model"] = body["model"]
    got = parse_body(jsoncodec.dumps(changed), prev)
    assert got.reused_messages == 4 and got.doc == changed
    shorter = copy.deepcopy(body)
    del shorter["messages"][6:]
    got = parse_body(jsoncodec.dumps(shorter), prev)
    assert got.doc == shorter and jsoncodec.dumps(got.doc) == jsoncodec.dumps(shorter)
    assert parse_body(b'{"messages":[]}', prev).doc == {"messages": []}


def test_a_rewritten_previous_view_shares_only_originals():
    b = SessionBuilder()
    for i in range(7):
        turn(b, i)
    raw1 = jsoncodec.dumps(b.body())
    p1 = parse_body(raw1)
    v1 = view_for("messages", p1.doc)
    first = v1.tool_results[0].id
    v1.unit_hashes()
    v1.replace_result_content(first, "[scalpel: x]")
    turn(b, 7)
    raw2 = jsoncodec.dumps(b.body())
    v2 = view_for("messages", parse_body(raw2, p1).doc, previous=v1)
    assert v2.result(first).content != "[scalpel: x]"
    same_view(v2, view_for("messages", jsoncodec.loads(raw2)))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 20), min_size=2, max_size=25), st.integers(0, 30))
def test_random_histories(turns, cut_at):
    b = SessionBuilder()
    for i in turns[:-1]:
        turn(b, i)
    body1 = b.body()
    turn(b, turns[-1])
    body2 = b.body()
    if cut_at < len(body2["messages"]) and cut_at % 3 == 0:
        body2["messages"][cut_at] = {"role": "user", "content": "rewritten"}
    raw1, raw2 = jsoncodec.dumps(body1), jsoncodec.dumps(body2)
    p1 = parse_body(raw1)
    v1 = view_for("messages", p1.doc)
    p2 = parse_body(raw2, p1)
    assert p2.doc == body2 and jsoncodec.dumps(p2.doc) == raw2
    same_view(view_for("messages", p2.doc, previous=v1), view_for("messages", jsoncodec.loads(raw2)))
