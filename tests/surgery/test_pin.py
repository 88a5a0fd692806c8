"""The pin: one more cache marker on a live entry's block, and the validator that allows exactly that."""

from __future__ import annotations

from scalpel_desktop.surgery.pin import marker_ttls, pinnable, pinned
from scalpel_desktop.surgery.validate import pin_problems

CC = {"type": "ephemeral"}
CC1H = {"type": "ephemeral", "ttl": "1h"}


def body(ttl=CC, n=6):
    msgs = []
    for i in range(n):
        if i % 2 == 0:
            msgs.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": "x"}]})
        else:
            msgs.append({"role": "assistant", "content": [{"type": "thinking", "thinking": "", "signature": "s"},
                                                          {"type": "tool_use", "id": f"t{i + 1}", "name": "Read",
                                                           "input": {}}]})
    msgs[-1] = dict(msgs[-1])
    msgs[-1]["content"] = [dict(b) for b in msgs[-1]["content"]]
    msgs[-1]["content"][-1]["cache_control"] = ttl
    return {"model": "m", "system": [{"type": "text", "text": "a", "cache_control": ttl},
                                     {"type": "text", "text": "b", "cache_control": ttl}], "messages": msgs}


def test_claude_code_leaves_one_marker_free():
    flags, free = pinnable(body())
    flags = list(flags)
    assert free == 1 and flags[:5] == [True] * 5 and flags[5] is False  # the last one is marked already


def test_pinned_adds_exactly_one_marker_without_touching_the_original():
    doc = body()
    before = repr(doc)
    out = pinned(doc, 2, "5m")
    assert repr(doc) == before
    assert out["messages"][2]["content"][-1]["cache_control"] == CC
    assert len(marker_ttls(out)) == 4
    assert all(a is b for i, (a, b) in enumerate(zip(doc["messages"], out["messages"])) if i != 2)
    assert pin_problems(doc, out, 2) == []


def test_a_fifth_marker_is_refused():
    doc = pinned(body(), 2, "5m")
    assert pinned(doc, 0, "5m") is None
    assert pinnable(doc)[1] == 0


def test_one_hour_must_stay_before_five_minutes():
    doc = body(CC)
    assert pinned(doc, 2, "1h") is None  # a 1h marker after the 5m system markers
    assert pinned(body(CC1H), 2, "1h") is not None


def test_the_validator_allows_nothing_but_the_marker():
    doc = body()
    out = pinned(doc, 2, "5m")
    assert pin_problems(doc, out, 3)  # on another message than said
    worse = pinned(doc, 2, "5m")
    worse["messages"][2]["content"][-1]["content"] = "changed"
    assert any("beyond one added marker" in p for p in pin_problems(doc, worse, 2))
    odd = pinned(doc, 2, "5m")
    odd["messages"][2]["content"][-1]["cache_control"] = {"type": "ephemeral", "ttl": "10m"}
    assert pin_problems(doc, odd, 2)
    other = pinned(doc, 2, "5m")
    other["system"] = other["system"][:1]
    assert any("system changed" in p for p in pin_problems(doc, other, 2))


def test_thinking_blocks_and_empty_messages_are_not_pinned():
    doc = body()
    doc["messages"][1] = {"role": "assistant", "content": [{"type": "thinking", "thinking": "", "signature": "s"}]}
    doc["messages"][2] = {"role": "system", "content": []}  # 2.1.332 after /compact (SPEC 9)
    doc["messages"][3] = {"role": "user", "content": ""}
    flags, _ = pinnable(doc)
    assert flags[1] is False and flags[2] is False and flags[3] is False
    assert pinned(doc, 1, "5m") is None and pinned(doc, 2, "5m") is None and pinned(doc, 3, "5m") is None


def test_a_string_message_is_pinned_as_its_one_text_block():
    """Claude Code 2.1's environment message (``role: system``, the second message) is a string
    after the first turn, and the first request's entry ends there: the only pin a death cut at
    the second request can have. The API reads a string as one text block (Claude Code sends its
    own last message as that block with a marker, then as a string, and reads it back), and so
    does the emulator's cache model."""
    from scalpel_desktop.accounting.prefix_blocks import request_blocks

    doc = body()
    doc["messages"][1] = {"role": "system", "content": "<env>cwd: /p</env>"}
    flags, _ = pinnable(doc)
    assert flags[1] is True
    out = pinned(doc, 1, "5m")
    assert out["messages"][1] == {"role": "system",
                                  "content": [{"type": "text", "text": "<env>cwd: /p</env>", "cache_control": CC}]}
    assert doc["messages"][1]["content"] == "<env>cwd: /p</env>"  # the original untouched
    assert pin_problems(doc, out, 1) == []
    assert [b.chain for b in request_blocks(out)] == [b.chain for b in request_blocks(doc)]  # no key changed
    worse = pinned(doc, 1, "5m")
    worse["messages"][1]["content"][0]["text"] = "<env>cwd: /q</env>"
    assert any("beyond one added marker" in p for p in pin_problems(doc, worse, 1))


def test_markers_counted_from_the_raw_bytes_never_too_few():
    from scalpel_desktop.wire.jsoncodec import dumps

    doc = body()
    doc["messages"][0]["content"][0]["content"] = 'a text that says "cache_control": {"type": "ephemeral"}'
    flags, free = pinnable(doc, dumps(doc))
    assert free == 1 and len(flags) == 6 and flags[2] is True
    assert pinnable(pinned(doc, 2, "5m"), dumps(pinned(doc, 2, "5m")))[1] == 0


def old_client_body(ttl=CC, n=7):
    """Claude Code before 2.1: two system markers and the last block of each of the last two messages."""
    doc = body(ttl, n)
    m = dict(doc["messages"][-2])
    m["content"] = [dict(b) for b in m["content"]]
    m["content"][-1]["cache_control"] = dict(ttl)
    doc["messages"][-2] = m
    return doc


def test_a_four_marker_client_lends_its_marker_on_the_message_before_the_last():
    doc = old_client_body()
    flags, free = pinnable(doc)
    assert free == 0 and flags.moves_from == 5 and flags.moved_ttl_s == 300.0
    assert flags.reach(2) == 2 + 1 + 2  # messages 3, 4, 5: from the pin's block to the moved marker's
    assert flags.reach(5) == -1  # (not before the moved marker)
    assert pinnable(body())[0].moves_from is None  # one marker free: nothing moves


def test_pinned_moves_the_marker_without_adding_one():
    from scalpel_desktop.accounting.prefix_blocks import request_blocks

    doc = old_client_body()
    before = repr(doc)
    out = pinned(doc, 2, "5m")
    assert repr(doc) == before  # the original untouched
    assert out["messages"][2]["content"][-1]["cache_control"] == CC
    assert "cache_control" not in out["messages"][5]["content"][-1]
    assert out["messages"][6]["content"][-1]["cache_control"] == CC  # the last message keeps its own
    assert len(marker_ttls(out)) == len(marker_ttls(doc)) == 4
    assert all(a is b for i, (a, b) in enumerate(zip(doc["messages"], out["messages"])) if i not in (2, 5))
    assert [b.chain for b in request_blocks(out)] == [b.chain for b in request_blocks(doc)]  # no key changed
    assert pin_problems(doc, out, 2) == []


def test_the_moved_marker_keeps_the_clients_ttl_and_never_goes_at_or_after_its_place():
    doc = old_client_body(CC1H)
    out = pinned(doc, 2, "5m")
    assert out["messages"][2]["content"][-1]["cache_control"] == CC1H
    assert pinned(old_client_body(), 5, "5m") is None and pinned(old_client_body(), 6, "5m") is None


def test_no_marker_moves_where_the_client_does_not_mark_the_last_two_messages():
    doc = body()
    doc["system"] = doc["system"] + [{"type": "text", "text": "c", "cache_control": CC}]
    flags, free = pinnable(doc)  # 4 markers, but the message before the last carries none
    assert free == 0 and flags.moves_from is None
    assert pinned(doc, 2, "5m") is None


def test_the_validator_allows_the_move_and_nothing_more():
    doc = old_client_body()
    good = pinned(doc, 2, "5m")
    assert pin_problems(doc, good, 2) == []
    lost = pinned(doc, 2, "5m")
    lost["messages"][2] = doc["messages"][2]  # taken off, put nowhere
    assert pin_problems(doc, lost, 2)
    other = pinned(doc, 2, "5m")
    other["messages"][2]["content"][-1]["cache_control"] = CC1H  # not the marker taken off
    assert any("not the one put on" in p for p in pin_problems(doc, other, 2))
    edited = pinned(doc, 2, "5m")
    edited["messages"][5]["content"][-1]["name"] = "Write"  # more than the marker taken off
    assert any("beyond one marker taken off" in p for p in pin_problems(doc, edited, 2))
    wrong = old_client_body()
    m = dict(wrong["messages"][4])
    m["content"] = [dict(m["content"][-1], cache_control=CC)]
    wrong["messages"][4] = m  # a marker on messages[-3] instead: not the client's movable one
    moved_from_3 = pinned(body(), 2, "5m")
    assert pin_problems(wrong, moved_from_3, 2)
    unmarked_last = old_client_body()
    last = dict(unmarked_last["messages"][6])
    last["content"] = [{k: v for k, v in b.items() if k != "cache_control"} for b in last["content"]]
    unmarked_last["messages"][6] = last
    moved = pinned(old_client_body(), 2, "5m")
    moved["messages"][6] = last
    assert any("does not mark the last two" in p for p in pin_problems(unmarked_last, moved, 2))
