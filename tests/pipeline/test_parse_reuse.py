"""ParseReuse builds exactly ``loads(raw)`` while parsing only what is new, and the
conversation views built on its documents share the previous view's analysis."""

from __future__ import annotations

import copy
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from scalpel_desktop.pipeline.parse_reuse import ParseReuse
from scalpel_desktop.exchange import ApiRequest, Exchange
from scalpel_desktop.surgery.doom import find_doom_spans
from scalpel_desktop.surgery.testing import SessionBuilder, file_text
from scalpel_desktop.wire import jsoncodec
from scalpel_desktop.wire.jsoncodec import dumps, loads
from scalpel_desktop.wire.formats import view_for
from scalpel_desktop.wire.held import body_held

from tests.invariants.agent_sessions import generate


def _ex(raw: bytes) -> Exchange:
    return Exchange(ApiRequest("POST", "/v1/messages", "", "anthropic", "messages", {}, raw, 0.0))


def _seen(stage: ParseReuse, ex: Exchange) -> Exchange:
    """The request and its response: a first sighting is remembered after the response."""
    stage.on_request(ex)
    stage.on_response(ex)
    return ex


def test_documents_equal_a_full_parse_across_interleaved_conversations():
    stage = ParseReuse(min_bytes=0)
    a = generate(random.Random(1)).requests
    b = generate(random.Random(2)).requests
    reqs = [r for pair in zip(a, b) for r in pair]
    for r in reqs:
        raw = dumps(r.body)
        ex = _seen(stage, _ex(raw))
        assert ex.doc == loads(raw)
        assert dumps(ex.doc) == raw  # key order too
    assert stage.reused > len(reqs) // 2


def test_a_changed_prefix_falls_back_to_a_full_parse():
    stage = ParseReuse(min_bytes=0)
    s = generate(random.Random(5)).requests
    first, second = dumps(s[3].body), s[4].body
    _seen(stage, _ex(first))
    second = dict(second)
    second["messages"] = [dict(second["messages"][0], content="rewritten")] + second["messages"][1:]
    raw = dumps(second)
    ex = _ex(raw)
    stage.on_request(ex)
    assert ex.doc == loads(raw) and stage.reused == 0


def test_small_and_broken_bodies_are_left_to_the_lazy_parse():
    stage = ParseReuse()
    ex = _ex(b'{"model":"m","messages":[]}')
    stage.on_request(ex)
    assert ex.layout is None and ex.doc == {"model": "m", "messages": []}
    ex = _ex(b"{not json" * 10_000)
    stage = ParseReuse(min_bytes=0)
    stage.on_request(ex)
    assert ex.doc is None


# -- views over re-used documents (formerly tests/wire/test_incremental.py) ------------------

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
    reuse = ParseReuse(min_bytes=0)
    prev = reuse.parse(jsoncodec.dumps(b.body()))
    prev_view = view_for("messages", prev.doc)
    prev_view.unit_hashes()
    for i in range(1, 12):
        turn(b, i)
        raw = jsoncodec.dumps(b.body())
        got = reuse.parse(raw)
        assert got.doc == jsoncodec.loads(raw) and jsoncodec.dumps(got.doc) == raw
        assert got.layout.reused == len(prev.doc["messages"]) - 1  # the last one carried the marker
        v = view_for("messages", got.doc, previous=prev_view)
        assert v.reused_units == got.layout.reused
        same_view(v, view_for("messages", jsoncodec.loads(raw)))
        prev, prev_view = got, v


def test_rewrites_in_the_middle_and_other_keys():
    b = SessionBuilder()
    for i in range(9):
        turn(b, i)
    body = b.body()
    reuse = ParseReuse(min_bytes=0)
    reuse.parse(jsoncodec.dumps(body))
    changed = copy.deepcopy(body)
    changed["messages"][4]["content"][0]["text"] = "rewritten by the client"
    changed["model"] = "claude-haiku"  # the head differs: no re-use at all
    got = reuse.parse(jsoncodec.dumps(changed))
    assert got.layout.reused == 0 and got.base is None and got.doc == changed
    changed["model"] = body["model"]
    got = reuse.parse(jsoncodec.dumps(changed))  # a rewrite before the last message: parsed in full
    assert got.layout.reused == 0 and got.doc == changed and jsoncodec.dumps(got.doc) == jsoncodec.dumps(changed)
    shorter = copy.deepcopy(body)
    del shorter["messages"][6:]
    got = reuse.parse(jsoncodec.dumps(shorter))
    assert got.doc == shorter and jsoncodec.dumps(got.doc) == jsoncodec.dumps(shorter)
    assert reuse.parse(b'{"messages":[]}').doc == {"messages": []}
    assert reuse.reused == 0


def test_a_rewritten_previous_view_shares_only_originals():
    b = SessionBuilder()
    for i in range(7):
        turn(b, i)
    raw1 = jsoncodec.dumps(b.body())
    reuse = ParseReuse(min_bytes=0)
    p1 = reuse.parse(raw1)
    v1 = view_for("messages", p1.doc)
    first = v1.tool_results[0].id
    v1.unit_hashes()
    v1.replace_result_content(first, "[scalpel: x]")
    turn(b, 7)
    raw2 = jsoncodec.dumps(b.body())
    p2 = reuse.parse(raw2)
    assert p2.base is raw1 and p2.layout.reused > 0
    v2 = view_for("messages", p2.doc, previous=v1)
    assert v2.reused_units == p2.layout.reused
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
    reuse = ParseReuse(min_bytes=0)
    p1 = reuse.parse(raw1)
    v1 = view_for("messages", p1.doc)
    p2 = reuse.parse(raw2)
    assert p2.doc == body2 and jsoncodec.dumps(p2.doc) == raw2
    same_view(view_for("messages", p2.doc, previous=v1), view_for("messages", jsoncodec.loads(raw2)))


def test_remembered_bodies_are_bounded_by_bytes_least_recently_used_first():
    """Eight long conversations must not hold eight bodies each when the byte budget says less."""
    sessions = [generate(random.Random(seed)).requests for seed in (11, 12, 13, 14)]
    bodies = [[dumps(r.body) for r in reqs] for reqs in sessions]
    biggest = max(len(b) for bs in bodies for b in bs)
    most = max(len(r.body["messages"]) for reqs in sessions for r in reqs)
    budget = 2 * body_held(biggest, most) + 1  # room for about two bodies, never four
    stage = ParseReuse(min_bytes=0, max_bytes=budget)
    for step in range(min(len(bs) for bs in bodies)):
        for bs in bodies:
            raw = bs[step]
            ex = _seen(stage, _ex(raw))
            assert ex.doc == loads(raw)  # an evicted conversation is simply parsed in full
            assert stage.nbytes <= budget
            assert stage.nbytes == sum(r.nbytes() for r in stage._items.values())
            assert stage.nbytes >= 3 * sum(len(r.raw) for r in stage._items.values())  # what is parsed counts
    assert len(stage) < len(bodies)
    unbounded = ParseReuse(min_bytes=0, max_bytes=1 << 40)  # control: by count alone all four stay
    for bs in bodies:
        _seen(unbounded, _ex(bs[step]))
    assert len(unbounded) == len(bodies) and unbounded.nbytes > budget
    # A body above the whole budget is parsed but not remembered.
    small = ParseReuse(min_bytes=0, max_bytes=10)
    ex = _seen(small, _ex(bodies[0][0]))
    assert ex.doc == loads(bodies[0][0]) and small.nbytes == 0 and len(small) == 0


def test_a_first_sighting_is_laid_out_after_the_response_and_then_reused():
    """Nothing is located on the request path of a first sighting; the response lays it out once."""
    reqs = generate(random.Random(21)).requests
    stage = ParseReuse(min_bytes=0)
    first = _ex(dumps(reqs[3].body))
    stage.on_request(first)
    assert first.layout is None and first.layout_later is not None and len(stage) == 0
    stage.on_response(first)
    assert first.layout is not None and first.layout_later is None and len(stage) == 1
    assert len(first.layout.ends) == len(reqs[3].body["messages"])
    nxt = _seen(stage, _ex(dumps(reqs[4].body)))
    assert stage.reused == 1 and nxt.layout is not None and nxt.layout.reused > 0
    assert nxt.doc == reqs[4].body


def test_the_layout_a_later_stage_found_is_taken_over_not_found_again(monkeypatch):
    from scalpel_desktop.pipeline import parse_reuse
    from scalpel_desktop.wire.layout import locate

    reqs = generate(random.Random(22)).requests
    stage = ParseReuse(min_bytes=0)
    ex = _ex(dumps(reqs[3].body))
    stage.on_request(ex)
    ex.layout = locate(ex.request.body, ex.doc, None)  # as the surgery stage publishes its own pass
    calls = []
    monkeypatch.setattr(parse_reuse, "locate", lambda *a: calls.append(a) or locate(*a))
    stage.on_response(ex)
    assert calls == [] and len(stage) == 1


def test_the_budget_is_read_live_from_the_setting_and_a_bad_one_keeps_the_last():
    """``parse_reuse_mb`` as the runtime hands it over (a callable read on every remember)."""
    reqs = generate(random.Random(31)).requests
    raws = [dumps(r.body) for r in reqs[2:6]]
    budget = {"value": 1 << 30}

    def read() -> int:
        if budget["value"] is None:
            raise ValueError("not a number")
        return budget["value"]

    stage = ParseReuse(min_bytes=0, size=100, budget=read)
    _seen(stage, _ex(raws[0]))
    assert len(stage) == 1 and stage.max_bytes == 1 << 30
    budget["value"] = None  # a bad setting: the last good budget stands
    _seen(stage, _ex(raws[1]))
    assert stage.max_bytes == 1 << 30 and len(stage) >= 1
    budget["value"] = 0  # 0: nothing is remembered, every body parsed in full
    ex = _seen(stage, _ex(raws[2]))
    assert ex.doc == loads(raws[2]) and len(stage) == 0 and stage.nbytes == 0


def test_a_remembered_body_is_counted_by_its_size_and_message_count():
    reqs = generate(random.Random(41)).requests
    raw = dumps(reqs[5].body)
    stage = ParseReuse(min_bytes=0)
    _seen(stage, _ex(raw))
    (item,) = stage._items.values()
    assert stage.nbytes == item.held == body_held(len(raw), len(reqs[5].body["messages"]))
    assert item.held > 3 * len(raw)  # raw bytes, and a parsed document about three times their size


def test_the_shipped_stages_take_the_parse_reuse_mb_setting(tmp_path):
    from scalpel_desktop.accounting.prices import PriceTable
    from scalpel_desktop.pipeline.assemble import close_stages, default_stages

    settings = {"parse_reuse_mb": 3}
    stages = default_stages(settings, db_path=tmp_path / "l.db", spill_dir=tmp_path / "spill",
                            prices=PriceTable.builtin())
    try:
        reuse = stages[0]
        assert isinstance(reuse, ParseReuse)
        reuse.min_bytes = 0  # these bodies are small
        reqs = generate(random.Random(51)).requests
        _seen(reuse, _ex(dumps(reqs[4].body)))
        assert reuse.max_bytes == 3 * 1024 * 1024 and len(reuse) == 1
        settings["parse_reuse_mb"] = 0  # changed while running: read on the next body
        _seen(reuse, _ex(dumps(reqs[5].body)))
        assert reuse.max_bytes == 0 and len(reuse) == 0 and reuse.nbytes == 0
    finally:
        close_stages(stages)


def test_a_first_sighting_makes_room_before_it_is_remembered():
    """Its parse pushes out, at once, the bodies it will replace after the response."""
    sessions = [generate(random.Random(seed)).requests for seed in (61, 62)]
    a, b = dumps(sessions[0][5].body), dumps(sessions[1][5].body)
    one = body_held(len(a), len(sessions[0][5].body["messages"]))
    two = body_held(len(b), len(sessions[1][5].body["messages"]))
    stage = ParseReuse(min_bytes=0, max_bytes=max(one, two) + min(one, two) // 2)  # one at a time
    _seen(stage, _ex(a))
    assert len(stage) == 1
    ex = _ex(b)
    stage.on_request(ex)  # a first sighting: parsed in full, remembered after the response
    assert ex.layout_later is not None and len(stage) == 0 and stage.nbytes == 0  # a's room made now
    stage.on_response(ex)
    assert len(stage) == 1 and stage.nbytes == two
