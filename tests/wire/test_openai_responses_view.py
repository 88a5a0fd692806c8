"""The OpenAI Responses view: input items, function and custom tool calls, their outputs."""

from __future__ import annotations

from scalpel_desktop.wire import jsoncodec
from scalpel_desktop.wire.formats import view_for
from scalpel_desktop.wire.openai_responses_view import ResponsesView


def view(items, **top) -> ResponsesView:
    v = view_for("responses", {"model": "gpt-5", "input": items, **top})
    assert isinstance(v, ResponsesView)
    return v


def test_function_and_custom_tool_calls_and_their_outputs():
    v = view([{"type": "function_call", "call_id": "c1", "name": "shell", "arguments": '{"cmd": "ls"}'},
              {"type": "custom_tool_call", "call_id": "c2", "name": "apply_patch", "input": "*** Begin Patch"},
              {"type": "function_call_output", "call_id": "c1", "output": "a"},
              {"type": "function_call_output", "call_id": "c2",
               "output": [{"type": "input_text", "text": "ok"}, {"type": "input_image", "image_url": "u"}]}])
    assert v.tool_calls["c1"].input == {"cmd": "ls"}
    assert v.tool_calls["c2"].input == "*** Begin Patch"  # custom calls: raw input, not parsed arguments
    assert [(r.id, r.name, r.text, r.images, r.understood) for r in v.tool_results] == [
        ("c1", "shell", "a", 0, True), ("c2", "apply_patch", "ok", 1, True)]


def test_roles_are_the_message_role_else_the_item_type():
    v = view([{"role": "developer", "content": "x"}, {"type": "reasoning", "summary": []}, "loose", {}])
    assert [u.role for u in v.units] == ["developer", "reasoning", "?", "?"]


def test_an_output_before_its_call_or_with_an_unknown_part_is_never_cut():
    v = view([{"type": "function_call_output", "call_id": "c1", "output": "x"},
              {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
              {"type": "function_call", "call_id": "c2", "name": "f", "arguments": "{}"},
              {"type": "function_call_output", "call_id": "c2", "output": [{"type": "refusal", "refusal": "no"}]}])
    assert [(r.id, r.understood) for r in v.tool_results] == [("c1", False), ("c2", False)]


def test_cwd_from_the_instructions_and_no_ttl():
    v = view([{"role": "user", "content": "hi"}], instructions="Working directory: /repo\n")
    assert v.cwd() == "/repo" and v.ttl() is None and v.breakpoints() == []


def test_replace_writes_output_and_a_list_stub_uses_input_text():
    doc = {"model": "gpt-5", "input": [{"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
                                       {"type": "function_call_output", "call_id": "c1", "output": "big"}]}
    raw = jsoncodec.dumps(doc)
    v = view_for("responses", doc)
    v.replace_result_content("c1", [{"type": v.text_block_type, "text": "[stub]"}])
    assert jsoncodec.dumps(doc) == raw
    assert jsoncodec.loads(v.serialize())["input"][1]["output"] == [{"type": "input_text", "text": "[stub]"}]
    assert v.result("c1").text == "[stub]" and v.result("c1").understood
