"""Stateless turn choice, side requests, ids."""

from __future__ import annotations

import re

from scalpel_desktop.emulator import answers
from scalpel_desktop.emulator.script import Script, call, conversation_shape, is_side_request, say
from scalpel_desktop.emulator.scripts import claude_code_session, named_script

TOOLS = [{"name": "Read", "input_schema": {"type": "object"}}]


def body(messages, **kw):
    return {"model": "claude-opus-4-1", "max_tokens": 32000, "tools": TOOLS, "messages": messages, **kw}


def tool_round(i):
    return [{"role": "assistant", "content": [{"type": "tool_use", "id": f"t{i}", "name": "Read", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": "x"}]}]


SCRIPT = Script(main=[call("Read", file_path="/a"), call("Read", file_path="/b"), say("main done")],
                tracks={"resume": [say("resumed")], "subagent": [say("sub")], "other": [say("marked")]},
                final_text="the end")


def test_turn_index_counts_assistant_turns_since_the_prompt():
    msgs = [{"role": "user", "content": "go"}, {"role": "system", "content": "env"}]
    assert SCRIPT.choose({}, body(msgs)).turn == SCRIPT.main[0]
    msgs += tool_round(1)
    assert SCRIPT.choose({}, body(msgs)).index == 1
    msgs += tool_round(2)
    assert SCRIPT.choose({}, body(msgs)).turn.text == "main done"
    msgs += [{"role": "assistant", "content": "main done"}, {"role": "user", "content": "more?"}]
    choice = SCRIPT.choose({}, body(msgs))
    assert (choice.track, choice.index, choice.turn.text) == ("resume", 0, "resumed")
    msgs += [{"role": "assistant", "content": "resumed"}, {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "zz", "content": "r"}, {"type": "text", "text": "loaded"}]}]
    assert SCRIPT.choose({}, body(msgs)).turn.text == "the end"  # past the track's end


def test_marker_and_agent_header_pick_tracks():
    marked = body([{"role": "user", "content": [{"type": "text", "text": "<reminder/>"},
                                                {"type": "text", "text": "SCRIPT:other do it"}]}])
    assert SCRIPT.choose({}, marked).track == "other"
    sub = body([{"role": "user", "content": "check"}])
    assert SCRIPT.choose({"X-Claude-Code-Agent-Id": "a1"}, sub).track == "subagent"
    assert SCRIPT.choose({}, sub).track == "main"


def test_side_requests():
    assert is_side_request(body([{"role": "user", "content": "title"}], tools=[]))
    assert is_side_request(body([{"role": "user", "content": "x"}], model="claude-haiku-4-5"))
    assert is_side_request(body([{"role": "user", "content": "x"}], max_tokens=512))
    assert is_side_request(body([{"role": "user", "content": [{"type": "text", "text": "Warmup"}]}]))
    assert not is_side_request(body([{"role": "user", "content": "fix it"}]))
    s = claude_code_session("/tmp/x")
    assert s.choose({}, body([{"role": "user", "content": "t"}], tools=[])).side
    assert not Script().choose({}, body([{"role": "user", "content": "t"}], tools=[])).side  # plain scripts answer all


def test_openai_shapes():
    chat = {"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "q"},
                         {"role": "assistant", "tool_calls": [{"id": "c1"}]}, {"role": "tool", "tool_call_id": "c1"}]}
    assert conversation_shape(chat).turns_since_anchor == 1
    resp = {"input": [{"role": "user", "content": [{"type": "input_text", "text": "SCRIPT:x q"}]},
                      {"type": "function_call", "call_id": "a"}, {"type": "function_call", "call_id": "b"},
                      {"type": "function_call_output", "call_id": "a"}, {"type": "function_call_output", "call_id": "b"}]}
    shape = conversation_shape(resp)
    assert (shape.turns_since_anchor, shape.anchor_text) == (1, "SCRIPT:x q")
    assert conversation_shape({"input": "just text"}).prompt_number == 1


def test_ids_have_a_per_process_random_part():
    a, b = answers.new_id("toolu_"), answers.new_id("toolu_")
    assert a != b and a.startswith("toolu_" + answers.RUN) and b.startswith("toolu_" + answers.RUN)
    assert re.fullmatch(r"[0-9a-f]{12}", answers.RUN)


def test_named_scripts():
    assert named_script("text", text="hi").main[0].text == "hi"
    s = named_script("claude_code_session", workdir="/w")
    names = [t.tool_calls[0].name for t in s.main if t.tool_calls]
    assert names == ["Read", "Bash", "Edit", "Bash", "Read", "Read", "Agent"]
    assert len(s.main[5].tool_calls) == 2  # the parallel turn
    assert claude_code_session("/w", agent_tool="Task").main[6].tool_calls[0].name == "Task"
