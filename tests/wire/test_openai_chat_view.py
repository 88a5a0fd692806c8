"""The OpenAI Chat view: tool calls from tool_calls, results from role "tool" messages, no markers."""

from __future__ import annotations

from scalpel_desktop.wire import jsoncodec
from scalpel_desktop.wire.formats import view_for
from scalpel_desktop.wire.openai_chat_view import ChatView


def call(cid, name="shell", args='{"cmd": "ls"}'):
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}


def view(messages, **top) -> ChatView:
    v = view_for("chat", {"model": "gpt-4.1", "messages": messages, **top})
    assert isinstance(v, ChatView)
    return v


def test_calls_and_results():
    v = view([{"role": "user", "content": "go"},
              {"role": "assistant", "content": None, "tool_calls": [call("c1"), call("c2", "read", "{bad")]},
              {"role": "tool", "tool_call_id": "c1", "content": "a\nb"},
              {"role": "tool", "tool_call_id": "c2", "content": [{"type": "text", "text": "x"},
                                                                 {"type": "image_url", "image_url": {"url": "u"}}]}])
    assert v.tool_calls["c1"].input == {"cmd": "ls"} and v.tool_calls["c2"].input == "{bad"
    assert [(r.id, r.name, r.text, r.images, r.understood, r.is_error, r.block_index, r.unit_index)
            for r in v.tool_results] == [("c1", "shell", "a\nb", 0, True, None, None, 2),
                                         ("c2", "read", "x", 1, True, None, None, 3)]


def test_a_tool_message_before_any_call_is_an_orphan_never_cut():
    v = view([{"role": "tool", "tool_call_id": "c1", "content": "x"},
              {"role": "assistant", "tool_calls": [call("c1")]}])
    assert v.tool_results[0].understood is False and v.tool_results[0].name is None


def test_odd_tool_calls_and_messages_are_read_without_failing():
    v = view(["loose", {"role": "assistant", "tool_calls": ["x", {"id": 5}, {"id": "c", "function": "f"}]},
              {"role": "tool", "content": "no id"}])
    assert [u.role for u in v.units] == ["?", "assistant", "tool"]
    assert v.tool_calls["c"].name == "" and list(v.tool_calls) == ["c"]
    assert v.tool_results == []


def test_no_breakpoints_and_no_ttl_even_with_a_retention():
    v = view([{"role": "user", "content": "hi"}], prompt_cache_retention="24h")
    assert v.breakpoints() == [] and v.ttl() is None


def test_cwd_from_the_leading_messages_only():
    assert view([{"role": "system", "content": "Working directory: /w"}]).cwd() == "/w"
    assert view([{"role": "user", "content": "x"}] * 6 + [{"role": "user", "content": "Working directory: /w"}]).cwd() is None


def test_replace_writes_the_tool_message_content_only():
    doc = {"model": "gpt-4.1", "messages": [{"role": "assistant", "tool_calls": [call("c1")]},
                                             {"role": "tool", "tool_call_id": "c1", "content": "big", "name": "shell"}]}
    raw = jsoncodec.dumps(doc)
    v = view_for("chat", doc)
    v.replace_result_content("c1", "[stub]")
    assert jsoncodec.dumps(doc) == raw
    assert jsoncodec.loads(v.serialize())["messages"][1] == {"role": "tool", "tool_call_id": "c1",
                                                             "content": "[stub]", "name": "shell"}
    assert v.result("c1").chars == 6
