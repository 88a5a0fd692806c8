"""Answer bodies and streams: each stream, put back together the way a client does, is its body."""

from __future__ import annotations

import json

from scalpel_desktop.emulator import answers
from scalpel_desktop.emulator.script import ToolCall, Turn, call, say
from scalpel_desktop.wire.usage import Usage

USAGE = Usage(input_tokens=7, cache_write_5m=300, cache_write_1h=200, cache_read=4000, output_tokens=0)
LONG = "A text long enough to be sent in several deltas, with unicode: café ☃ and more words."


def test_ids_never_repeat_and_carry_the_run():
    ids = {answers.new_id("toolu_") for _ in range(200)}
    assert len(ids) == 200 and all(i.startswith("toolu_" + answers.RUN) for i in ids)


def test_thinking_only_when_the_request_turns_it_on():
    assert answers.thinking_wanted({}) is None
    assert answers.thinking_wanted({"thinking": {"type": "disabled"}}) is None
    assert answers.thinking_wanted({"thinking": {"type": "enabled", "budget_tokens": 1024}})
    assert answers.thinking_wanted({"thinking": {"type": "adaptive", "display": "omitted"}}) == ""


def test_anthropic_content_order_thinking_text_then_calls():
    turn = Turn(text="Reading.", tool_calls=(ToolCall("Read", {"file_path": "/a"}), ToolCall("Bash", {"command": "ls"})))
    content = answers.anthropic_content(turn, {"thinking": {"type": "enabled"}})
    assert [b["type"] for b in content] == ["thinking", "text", "tool_use", "tool_use"]
    assert content[0]["signature"] == answers.SIGNATURE
    assert [(b["name"], b["input"]) for b in content[2:]] == [("Read", {"file_path": "/a"}), ("Bash", {"command": "ls"})]
    assert answers.anthropic_content(say("hi"), {}) == [{"type": "text", "text": "hi"}]


def test_the_usage_reads_back_as_it_was_billed():
    message = answers.anthropic_message(say("x"), {"model": "m"}, USAGE, [{"type": "text", "text": "x"}])
    assert Usage.from_anthropic(message["usage"]) == USAGE
    assert message["stop_reason"] == "end_turn" and message["model"] == "m"
    assert answers.anthropic_message(call("Read"), {}, USAGE, [])["stop_reason"] == "tool_use"


def rebuild_anthropic(events) -> dict:
    """What an SDK does with the stream."""
    msg, blocks, partial = None, {}, {}
    names = []
    for name, data in events:
        names.append(name)
        assert data["type"] == name
        if name == "message_start":
            msg = data["message"]
        elif name == "content_block_start":
            blocks[data["index"]] = dict(data["content_block"])
        elif name == "content_block_delta":
            b, d = blocks[data["index"]], data["delta"]
            if d["type"] == "text_delta":
                b["text"] += d["text"]
            elif d["type"] == "thinking_delta":
                b["thinking"] += d["thinking"]
            elif d["type"] == "signature_delta":
                b["signature"] = d["signature"]
            else:
                partial[data["index"]] = partial.get(data["index"], "") + d["partial_json"]
        elif name == "content_block_stop" and data["index"] in partial:
            blocks[data["index"]]["input"] = json.loads(partial[data["index"]])
        elif name == "message_delta":
            msg = dict(msg, stop_reason=data["delta"]["stop_reason"], usage=dict(msg["usage"], **data["usage"]))
    assert names[0] == "message_start" and names[-1] == "message_stop" and names.count("ping") == 1
    return dict(msg, content=[blocks[i] for i in sorted(blocks)])


def test_the_anthropic_stream_rebuilds_the_message():
    turn = Turn(text=LONG, tool_calls=(ToolCall("Edit", {"file_path": "/a", "old_string": "x" * 100, "new_string": "ü"}),))
    body = {"model": "m", "thinking": {"type": "enabled"}}
    content = answers.anthropic_content(turn, body)
    message = answers.anthropic_message(turn, body, USAGE, content)
    rebuilt = rebuild_anthropic(answers.anthropic_events(message))
    assert rebuilt == message


def test_an_omitted_thinking_streams_only_its_signature():
    body = {"thinking": {"type": "adaptive", "display": "omitted"}}
    message = answers.anthropic_message(say("ok"), body, USAGE, answers.anthropic_content(say("ok"), body))
    events = list(answers.anthropic_events(message))
    thinking_deltas = [d["delta"]["type"] for n, d in events if n == "content_block_delta" and d["index"] == 0]
    assert thinking_deltas == ["signature_delta"]
    assert rebuild_anthropic(events)["content"][0] == {"type": "thinking", "thinking": "", "signature": answers.SIGNATURE}


def test_sse_framing():
    assert answers.sse("ping", {"type": "ping"}) == b'event: ping\ndata: {"type":"ping"}\n\n'
    assert answers.sse(None, "[DONE]") == b"data: [DONE]\n\n"


def test_chat_completion_and_its_chunks():
    turn = Turn(text=None, tool_calls=(ToolCall("get_weather", {"city": "Paris"}), ToolCall("get_time", {"tz": "CET"})))
    done = answers.chat_completion(turn, {"model": "gpt-4.1"}, USAGE)
    choice = done["choices"][0]
    assert choice["finish_reason"] == "tool_calls" and choice["message"]["content"] is None
    assert [json.loads(c["function"]["arguments"]) for c in choice["message"]["tool_calls"]] == [
        {"city": "Paris"}, {"tz": "CET"}]
    assert Usage.from_openai(done["usage"]) == Usage(input_tokens=507, cache_read=4000,
                                                     output_tokens=done["usage"]["completion_tokens"])
    chunks = list(answers.chat_chunks(done, include_usage=True))
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"] == done["usage"]
    calls: dict[int, dict] = {}
    for ch in chunks[:-1]:
        for tc in ch["choices"][0]["delta"].get("tool_calls", []):
            c = calls.setdefault(tc["index"], {"id": tc.get("id"), "arguments": ""})
            c["arguments"] += tc["function"]["arguments"]
    assert [(c["id"], c["arguments"]) for c in calls.values()] == [
        (t["id"], t["function"]["arguments"]) for t in choice["message"]["tool_calls"]]
    assert next(ch for ch in chunks if ch["choices"] and ch["choices"][0]["finish_reason"])["choices"][0][
        "finish_reason"] == "tool_calls"
    assert "usage" not in list(answers.chat_chunks(done, include_usage=False))[-1]


def test_chat_text_chunks_add_up():
    done = answers.chat_completion(say(LONG), {"model": "gpt-4.1"}, USAGE)
    text = "".join(ch["choices"][0]["delta"].get("content") or "" for ch in answers.chat_chunks(done, False))
    assert text == LONG == done["choices"][0]["message"]["content"]
    assert done["choices"][0]["finish_reason"] == "stop"


def test_the_responses_stream_rebuilds_the_response():
    turn = Turn(text=LONG, tool_calls=(ToolCall("shell", {"cmd": "ls -la " + "x" * 80}),))
    resp = answers.response_object(turn, {"model": "gpt-5", "instructions": "be brief"}, USAGE)
    assert [o["type"] for o in resp["output"]] == ["message", "function_call"]
    assert Usage.from_openai(resp["usage"]).cache_read == 4000 and resp["instructions"] == "be brief"
    events = list(answers.response_events(resp))
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    assert events[0]["type"] == "response.created" and events[-1] == {
        "type": "response.completed", "sequence_number": len(events) - 1, "response": resp}
    text = "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta")
    args = "".join(e["delta"] for e in events if e["type"] == "response.function_call_arguments.delta")
    assert text == LONG and json.loads(args) == {"cmd": "ls -la " + "x" * 80}
    assert [e["item"] for e in events if e["type"] == "response.output_item.done"] == resp["output"]
