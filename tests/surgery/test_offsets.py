"""Where each stub sits in the body sent: the one-pass scan agrees with a search per id."""

from __future__ import annotations

from types import SimpleNamespace

from scalpel_desktop.surgery.doom import STUB_TOKENS
from scalpel_desktop.surgery.offsets import first_result_offsets, stub_positions
from scalpel_desktop.wire import jsoncodec
from scalpel_desktop.wire.formats import view_for


def body_with(ids: list[str]) -> tuple[bytes, object]:
    msgs = [{"role": "user", "content": "go"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": t, "name": "Read", "input": {}} for t in ids]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": t, "content": "x" * 50} for t in ids]}]
    raw = jsoncodec.dumps({"model": "m", "messages": msgs})
    return raw, view_for("messages", jsoncodec.loads(raw))


def test_the_one_pass_scan_finds_what_a_search_per_id_finds():
    raw, _ = body_with(["toolu_01", "toolu_02", "toolu_10"])
    got = first_result_offsets(raw)
    assert set(got) == {b"toolu_01", b"toolu_02", b"toolu_10"}
    for tid, at in got.items():
        assert at == raw.find(b'"tool_use_id":"' + tid + b'"')
        assert raw[at:].startswith(b'"tool_use_id":"' + tid)


def test_a_repeated_id_keeps_its_first_offset_and_a_prefix_id_is_not_confused():
    raw = b'{"tool_use_id":"ab"},{"tool_use_id":"a"},{"tool_use_id":"ab"}'
    assert first_result_offsets(raw) == {b"ab": 1, b"a": 22}


def test_no_results_and_a_truncated_key():
    assert first_result_offsets(b'{"messages":[]}') == {}
    assert first_result_offsets(b'{"tool_use_id":"unterminated') == {}


def cut(tid, tokens):
    return SimpleNamespace(tool_use_id=tid, tokens=tokens)


def test_new_and_replayed_stubs_with_offset_saving_and_unit():
    raw, view = body_with(["toolu_a", "toolu_b"])
    out = stub_positions(raw, view, {"toolu_a": 500}, [cut("toolu_b", 1000), cut("toolu_b2", 10)])
    assert out[0] == ("toolu_a", raw.find(b'"tool_use_id":"toolu_a"'), 500, "replayed", 2)
    assert out[1] == ("toolu_b", raw.find(b'"tool_use_id":"toolu_b"'), 1000 - STUB_TOKENS, "new", 2)
    # a cut whose stub is not in the body sits at its end, saves nothing below zero, and has no unit
    assert out[2] == ("toolu_b2", len(raw), 0, "new", -1)


def test_an_id_the_scan_cannot_split_is_found_as_the_body_escapes_it():
    odd = 'toolu_"quoted"\\x'
    raw, view = body_with(["toolu_plain", odd])
    escaped = b'"tool_use_id":"toolu_\\"quoted\\"\\\\x"'
    assert raw.count(escaped) == 1
    assert stub_positions(raw, view, {}, [cut(odd, 100)]) == [(odd, raw.find(escaped), 100 - STUB_TOKENS, "new", 2)]


def test_nothing_to_place_scans_nothing():
    raw, view = body_with(["t"])
    assert stub_positions(raw, view, {}, []) == []
