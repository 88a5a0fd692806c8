"""The validator: only stubbed result contents may differ; the client's oddities pass."""

from __future__ import annotations

import copy

from scalpel_desktop.surgery.testing import SessionBuilder, file_text
from scalpel_desktop.surgery.validate import validate_rewrite
from scalpel_desktop.wire.formats import view_for

STUB = "[scalpel: superseded read removed (~700 tokens). Original: ~/spill/ab/ab ]"


def session():
    b = SessionBuilder()
    t1 = b.call("Read", {"file_path": "/home/user/proj/a.py"}, file_text("a", 40))
    t2 = b.call("Bash", {"command": "ls"}, [{"type": "text", "text": "x" * 900, "cache_control": {"type": "ephemeral"}}], False)
    b.call("Bash", {"command": "true"}, "", False)  # an empty result: the client's own oddity
    b.text("done")
    return b.body(), t1, t2


def test_stubbed_results_validate():
    body, t1, t2 = session()
    v = view_for("messages", body)
    v.replace_result_content(t1, STUB)
    v.replace_result_content(t2, [{"type": "text", "text": STUB, "cache_control": {"type": "ephemeral"}}])
    assert validate_rewrite(body, v.doc) == []
    assert validate_rewrite(body, copy.deepcopy(body)) == []


def test_client_oddities_are_no_reason_to_refuse():
    body, t1, _ = session()
    body["messages"][2]["content"].append({"type": "server_tool_use_future", "id": "x"})  # unknown block type
    body["messages"][-1]["content"][0]["cache_control"] = {"type": "ephemeral"}  # a 5th breakpoint
    v = view_for("messages", body)
    v.replace_result_content(t1, STUB)
    assert validate_rewrite(body, v.doc) == []


def test_refuses_every_other_change():
    body, t1, t2 = session()

    def broken(mutate):
        v = view_for("messages", body)
        v.replace_result_content(t1, STUB)
        new = copy.deepcopy(v.doc)
        mutate(new)
        return validate_rewrite(body, new)

    def thinking(d):
        d["messages"][2]["content"][0]["signature"] = "other"

    def role(d):
        d["messages"][3]["role"] = "assistant"

    def tool_input(d):
        d["messages"][2]["content"][1]["input"]["file_path"] = "/b"

    def pairing(d):
        d["messages"][3]["content"][0]["tool_use_id"] = "toolu_other"

    def drop_block(d):
        d["messages"][4]["content"].pop()

    def drop_message(d):
        d["messages"].pop()

    def marker(d):
        d["messages"][5]["content"][0]["content"][0].pop("cache_control")

    def not_a_stub(d):
        d["messages"][5]["content"][0]["content"] = "shorter"

    def shape(d):
        d["messages"][3]["content"][0]["content"] = [{"type": "text", "text": STUB}]

    def is_error(d):
        d["messages"][3]["content"][0]["is_error"] = True

    def top(d):
        d["max_tokens"] = 1

    def key_order(d):
        d["messages"][3]["content"][0] = dict(reversed(list(d["messages"][3]["content"][0].items())))

    def system(d):
        d["system"][1].pop("cache_control")

    for mutate in (thinking, role, tool_input, pairing, drop_block, drop_message, marker, not_a_stub, shape,
                   is_error, top, key_order, system):
        assert broken(mutate), mutate.__name__


def test_chat_and_responses():
    chat = {"model": "m", "messages": [
        {"role": "user", "content": "go"},
        {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "x" * 999}]}
    v = view_for("chat", chat)
    v.replace_result_content("c1", STUB)
    assert validate_rewrite(chat, v.doc) == []
    bad = copy.deepcopy(v.doc)
    bad["messages"][2]["tool_call_id"] = "c2"
    assert validate_rewrite(chat, bad)

    resp = {"model": "m", "input": [
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": [{"type": "input_text", "text": "y" * 999}]}]}
    v = view_for("responses", resp)
    v.replace_result_content("c1", [{"type": "input_text", "text": STUB}])
    assert validate_rewrite(resp, v.doc) == []
    bad = copy.deepcopy(v.doc)
    bad["input"][0]["arguments"] = '{"a": 1}'
    assert validate_rewrite(resp, bad)


def test_validated_pairs_skip_only_the_very_same_two_objects():
    """A pair that passed before is not compared again; anything else still is."""
    body, t1, t2 = session()
    v = view_for("messages", body)
    v.replace_result_content(t1, STUB)
    assert validate_rewrite(body, v.doc) == []
    good = [(o, n) for o, n in zip(body["messages"], v.doc["messages"]) if o is not n]
    assert good  # the rewritten unit
    # The same original message, rewritten badly into a NEW object: still refused,
    # even though a pair holding that original is marked validated.
    bad = copy.deepcopy(v.doc)
    i = next(i for i, (o, n) in enumerate(zip(body["messages"], v.doc["messages"])) if o is not n)
    bad["messages"][i]["content"][0]["content"] = "not a stub"
    assert validate_rewrite(body, bad, validated=good)
    assert validate_rewrite(body, bad) == validate_rewrite(body, bad, validated=good)
    # The validated pair itself passes with or without the hint; the keys around
    # the messages are still compared.
    assert validate_rewrite(body, v.doc, validated=good) == []
    changed = dict(v.doc, model="other")
    assert validate_rewrite(body, changed, validated=good) == ["model: changed"]
