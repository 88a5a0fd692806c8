"""The conversation view: real bodies round-trip, Claude Code specifics, copy-on-write edits."""

from __future__ import annotations

import copy
import json

import pytest

from scalpel_desktop.surgery.testing import SessionBuilder
from scalpel_desktop.wire import jsoncodec
from scalpel_desktop.wire.formats import view_for
from tests.support import CORPUS, corpus_dir


def _bodies_in(obj, out):
    if isinstance(obj, dict):
        if isinstance(obj.get("messages"), list) and "model" in obj:
            out.append(obj)
            return
        for v in obj.values():
            _bodies_in(v, out)
    elif isinstance(obj, list):
        for v in obj:
            _bodies_in(v, out)


def corpus_bodies() -> list[tuple[str, dict]]:
    """Every request body in ../shared/corpus/wire (requests*.jsonl and the redacted captures)."""
    out: list[tuple[str, dict]] = []
    wire = CORPUS / "wire"
    if not wire.is_dir():
        return out
    for f in sorted(wire.rglob("*.json*")):
        found: list[dict] = []
        if f.suffix == ".jsonl":
            for line in f.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    _bodies_in(json.loads(line), found)
        elif f.suffix == ".json":
            _bodies_in(json.loads(f.read_text(encoding="utf-8")), found)
        out += [(f"{f.relative_to(wire)}#{i}", b) for i, b in enumerate(found)]
    return out


def test_every_captured_body_round_trips_byte_identically():
    corpus_dir("wire")
    bodies = corpus_bodies()
    assert len(bodies) >= 70  # 2.1.332 (18), 2.0.77 (54), harvested pairs and records
    n_results = 0
    for name, body in bodies:
        raw = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        doc = jsoncodec.loads(raw)
        view = view_for("messages", doc)
        assert view is not None, name
        assert view.serialize() == raw, name
        assert len(view.unit_hashes()) == len(doc["messages"])
        n_results += len(view.tool_results)
    assert n_results > 300


def _rows(rel: str) -> list[dict]:
    path = corpus_dir("wire", *rel.split("/"))
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_claude_code_2_1_specifics():
    rows = _rows("claude-code-2.1.332/requests.jsonl")
    body = max((r["body"] for r in rows), key=lambda b: len(b["messages"]))
    v = view_for("messages", copy.deepcopy(body))
    assert v.cwd() == "/home/user/cc-2.1.332/proj"
    assert "system" in {u.role for u in v.units}
    assert v.ttl() == "5m"
    bps = v.breakpoints()
    assert [b.region for b in bps] == ["system", "system", "messages"]
    assert bps[-1].index == len(v.units) - 1
    by_name = {r.name: r for r in v.tool_results}
    assert by_name["ToolSearch"].understood is False  # tool_reference: never cut
    assert by_name["Agent"].understood is True and isinstance(by_name["Agent"].content, list)
    flags = {r.is_error for r in v.tool_results}
    assert flags == {None, False, True}  # present, absent, true: all seen as sent
    for r in v.tool_results:
        assert v.tool_calls[r.id].unit_index < r.unit_index


def test_claude_code_2_0_cwd_from_system_prompt_and_harvested_1h():
    rows = _rows("claude-code-2.0.77/requests.jsonl")
    v = view_for("messages", rows[-1]["body"])
    assert v.cwd() == "/home/user/cc-2.0.77/proj"
    wire = corpus_dir("wire", "redacted-bodies", "harvested")
    f = next(wire.glob("harvested-append-after-change-*.jsonl"))
    first = json.loads(f.read_text().splitlines()[0])["body"]
    v = view_for("messages", first)
    assert v.ttl() == "1h"
    assert len(v.tool_results) == 247


def test_unit_hashes_ignore_markers_and_string_vs_block_list():
    b = SessionBuilder()
    b.user("hello there")
    body1 = b.body()  # last message: block list with a cache marker
    body2 = copy.deepcopy(body1)
    body2["messages"][-1]["content"] = "hello there"  # the next turn sends it as a string
    h1 = view_for("messages", body1).unit_hashes()
    h2 = view_for("messages", body2).unit_hashes()
    assert h1 == h2
    body3 = copy.deepcopy(body1)
    body3["messages"][-1]["content"][0]["text"] = "hello there!"
    h3 = view_for("messages", body3).unit_hashes()
    assert h3[:-1] == h1[:-1] and h3[-1] != h1[-1]
    assert all(isinstance(h, bytes) and len(h) == 16 for h in h1)


def test_region_hashes():
    body = SessionBuilder().body()
    v = view_for("messages", body)
    moved = copy.deepcopy(body)
    del moved["system"][1]["cache_control"]
    assert view_for("messages", moved).system_hash() == v.system_hash()
    changed = copy.deepcopy(body)
    changed["system"][0]["text"] += "x"
    assert view_for("messages", changed).system_hash() != v.system_hash()
    tools = copy.deepcopy(body)
    tools["tools"].pop()
    assert view_for("messages", tools).tools_hash() != v.tools_hash()
    thinking = copy.deepcopy(body)
    thinking["thinking"] = {"type": "disabled"}
    assert view_for("messages", thinking).settings_hash() != v.settings_hash()
    assert view_for("messages", thinking).system_hash() == v.system_hash()


def test_replace_is_copy_on_write_and_deterministic():
    b = SessionBuilder()
    t1 = b.call("Read", {"file_path": "/home/user/proj/a.py"}, "1\tx\n" * 100)
    b.call("Bash", {"command": "ls"}, [{"type": "text", "text": "a\nb", "cache_control": {"type": "ephemeral"}}], False)
    body = b.body()
    raw = jsoncodec.dumps(body)
    v = view_for("messages", body)
    v.replace_result_content(t1, "[scalpel: stub]")
    assert jsoncodec.dumps(body) == raw  # the original document is untouched
    assert v.original_doc is body and v.doc is not body
    changed = [i for i, (a, c) in enumerate(zip(body["messages"], v.doc["messages"])) if a is not c]
    assert changed == [3]
    assert v.result(t1).content == "[scalpel: stub]" and v.result(t1).chars == len("[scalpel: stub]")
    again = view_for("messages", jsoncodec.loads(raw))
    again.replace_result_content(t1, "[scalpel: stub]")
    assert again.serialize() == v.serialize()
    with pytest.raises(KeyError):
        v.replace_result_content("toolu_nope", "x")


def test_not_a_conversation():
    assert view_for("messages", {"model": "x"}) is None
    assert view_for("messages", [1, 2]) is None
    assert view_for("other", {"messages": []}) is None
    assert view_for("responses", {"input": "just a string"}) is None


def test_openai_chat_view():
    doc = {
        "model": "gpt-5",
        "messages": [
            {"role": "system", "content": "Working directory: /w"},
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "a"}'}},
                {"id": "call_2", "type": "function", "function": {"name": "shell", "arguments": "not json"}},
            ]},
            {"role": "tool", "tool_call_id": "call_1", "content": "contents of a"},
            {"role": "tool", "tool_call_id": "call_2", "content": [{"type": "text", "text": "out"}]},
        ],
        "tools": [{"type": "function", "function": {"name": "read_file"}}],
        "prompt_cache_key": "k",
    }
    raw = jsoncodec.dumps(doc)
    v = view_for("chat", jsoncodec.loads(raw))
    assert v.serialize() == raw
    assert v.tool_calls["call_1"].input == {"path": "a"} and v.tool_calls["call_2"].input == "not json"
    assert [(r.id, r.name, r.text, r.is_error, r.block_index) for r in v.tool_results] == [
        ("call_1", "read_file", "contents of a", None, None), ("call_2", "shell", "out", None, None)]
    assert v.cwd() == "/w" and v.ttl() is None and v.breakpoints() == []
    v.replace_result_content("call_2", [{"type": "text", "text": "[scalpel: x]"}])
    out = jsoncodec.loads(v.serialize())
    assert out["messages"][4]["content"] == [{"type": "text", "text": "[scalpel: x]"}]
    assert out["messages"][:4] == doc["messages"][:4]


def test_openai_responses_view():
    doc = {
        "model": "gpt-5",
        "instructions": "Be brief.",
        "input": [
            {"role": "user", "content": [{"type": "input_text", "text": "go"}]},
            {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "zzz"},
            {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "shell", "arguments": '{"cmd": "ls"}'},
            {"type": "function_call_output", "call_id": "call_1", "output": "a\nb"},
        ],
        "tools": [{"type": "function", "name": "shell"}],
    }
    raw = jsoncodec.dumps(doc)
    v = view_for("responses", jsoncodec.loads(raw))
    assert v.serialize() == raw
    assert [u.role for u in v.units] == ["user", "reasoning", "function_call", "function_call_output"]
    r = v.result("call_1")
    assert (r.name, r.text, r.unit_index) == ("shell", "a\nb", 3)
    before = v.system_hash()
    v.replace_result_content("call_1", "[scalpel: x]")
    assert jsoncodec.loads(v.serialize())["input"][3] == {"type": "function_call_output", "call_id": "call_1", "output": "[scalpel: x]"}
    assert v.system_hash() == before
    assert v.text_block_type == "input_text"


def test_openai_regions_follow_what_breaks_their_cache():
    """The views and the surgery stage share one choice of regions per format."""
    from scalpel_desktop.wire.view import regions

    chat = {"model": "gpt-5", "messages": [{"role": "system", "content": "be brief"},
                                           {"role": "user", "content": "hi"}]}
    v = view_for("chat", chat)
    assert v.system_hash() != view_for("chat", {**chat, "messages": [
        {"role": "system", "content": "be verbose"}, {"role": "user", "content": "hi"}]}).system_hash()
    assert v.settings_hash() != view_for("chat", {**chat, "reasoning_effort": "high"}).settings_hash()
    assert v.tools_hash() != view_for("chat", {**chat, "functions": [{"name": "f"}]}).tools_hash()
    resp = {"model": "gpt-5", "instructions": "be brief", "input": [{"role": "user", "content": "hi"}]}
    r = view_for("responses", resp)
    assert r.settings_hash() != view_for("responses", {**resp, "reasoning": {"effort": "high"}}).settings_hash()
    assert regions("chat", chat)[0] == [chat["messages"][0]]


def test_a_reusing_view_drops_the_calls_and_results_of_the_units_it_does_not_share():
    def use(tid):
        return {"type": "tool_use", "id": tid, "name": "Read", "input": {}}

    def res(tid, text="out"):
        return {"type": "tool_result", "tool_use_id": tid, "content": text}

    shared = [{"role": "user", "content": "go"}, {"role": "assistant", "content": [use("a"), use("b")]},
              {"role": "user", "content": [res("a"), res("b")]}, {"role": "assistant", "content": [use("c")]}]
    old_tail = [{"role": "user", "content": [res("c"), res("a", "again")]},  # a repeated id: not its first place
                {"role": "assistant", "content": [use("d"), use("e")]}, {"role": "user", "content": [res("d")]}]
    new_tail = [{"role": "user", "content": [res("c", "other")]}, {"role": "assistant", "content": [use("f")]}]
    prev = view_for("messages", {"messages": shared + old_tail})
    got = view_for("messages", {"messages": shared + new_tail}, prev)
    fresh = view_for("messages", {"messages": shared + new_tail})
    assert got.reused_units == len(shared)
    assert list(got.tool_calls.items()) == list(fresh.tool_calls.items())  # the same, in the same order
    assert list(got._result_pos.items()) == list(fresh._result_pos.items())
    assert [(r.id, r.unit_index, r.text) for r in got.tool_results] == \
        [(r.id, r.unit_index, r.text) for r in fresh.tool_results]
    assert "d" not in got.tool_calls and "d" not in got._result_pos and "e" not in got.tool_calls
    assert list(prev.tool_calls) == ["a", "b", "c", "d", "e"] and "d" in prev._result_pos  # prev untouched
