"""The official SDKs against the emulator directly: it must look like the real APIs to them."""

from __future__ import annotations

import json

import anthropic
import openai
import pytest

from scalpel_desktop.accounting.cache_model import request_blocks
from scalpel_desktop.emulator.script import Script, ToolCall, parallel, say
from scalpel_desktop.emulator.testing import running_emulator

LONG = "The quick brown fox jumps over the lazy dog. " * 150  # ~1,700 rule tokens
MODEL = "claude-emulated-1"  # any name: the emulator serves every model
WEATHER = {"name": "get_weather", "description": "Weather for a city",
           "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}


@pytest.fixture
def emu():
    with running_emulator(min_cacheable=1024) as handle:
        yield handle


def client(emu) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=emu.url, api_key="sk-ant-test", max_retries=0)


def oai(emu) -> openai.OpenAI:
    return openai.OpenAI(base_url=emu.openai_url, api_key="sk-test", max_retries=0)


def cached_system():
    return [{"type": "text", "text": LONG, "cache_control": {"type": "ephemeral"}}]


def test_anthropic_plain_with_cache_usage(emu):
    c = client(emu)
    kwargs = dict(model=MODEL, max_tokens=64, system=cached_system(),
                  messages=[{"role": "user", "content": "Hello"}])
    first = c.messages.create(**kwargs)
    second = c.messages.create(**kwargs)
    assert first.content[0].type == "text" and first.content[0].text == "Hello from the scalpel emulator."
    assert first.stop_reason == "end_turn"
    sent = emu.received[0].json()
    sys_tokens = request_blocks(sent)[0].tokens
    assert first.usage.cache_creation_input_tokens == sys_tokens and first.usage.cache_read_input_tokens == 0
    assert first.usage.cache_creation.ephemeral_5m_input_tokens == sys_tokens
    assert second.usage.cache_read_input_tokens == sys_tokens and second.usage.cache_creation_input_tokens == 0
    assert second.usage.input_tokens == first.usage.input_tokens > 0
    h = emu.received[0].headers  # this SDK version sends the key as a Bearer token
    assert h.get("x-api-key") == "sk-ant-test" or h.get("authorization") == "Bearer sk-ant-test"


def test_anthropic_streaming(emu):
    c = client(emu)
    emu.set_script(Script(main=[say("Streaming works fine, one chunk after another.")]))
    with c.messages.stream(model=MODEL, max_tokens=64, system=cached_system(),
                           messages=[{"role": "user", "content": "Hi"}]) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert text == "Streaming works fine, one chunk after another."
    assert final.usage.output_tokens == emu.bills[-1].output_tokens
    assert final.usage.cache_creation_input_tokens == emu.bills[-1].cache_write_5m > 0
    assert emu.received[-1].json()["stream"] is True


def test_anthropic_parallel_tool_use_round_trip(emu):
    c = client(emu)
    emu.set_script(Script(main=[parallel(ToolCall("get_weather", {"city": "Paris"}),
                                         ToolCall("get_weather", {"city": "Rome"})), say("Sunny in both.")]))
    messages = [{"role": "user", "content": "Weather in Paris and Rome?"}]
    first = c.messages.create(model=MODEL, max_tokens=256, tools=[WEATHER], messages=messages)
    uses = [b for b in first.content if b.type == "tool_use"]
    assert first.stop_reason == "tool_use" and [u.input["city"] for u in uses] == ["Paris", "Rome"]
    messages += [{"role": "assistant", "content": [u.model_dump() for u in uses]},
                 {"role": "user", "content": [{"type": "tool_result", "tool_use_id": u.id, "content": "sunny"}
                                              for u in uses]}]
    with c.messages.stream(model=MODEL, max_tokens=256, tools=[WEATHER], messages=messages) as s:
        final = s.get_final_message()
    assert final.content[0].text == "Sunny in both."
    # a result that answers nothing is refused like the real API
    bad = messages[:1] + [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_nope",
                                                        "content": "x"}]}]
    with pytest.raises(anthropic.BadRequestError) as err:
        c.messages.create(model=MODEL, max_tokens=256, tools=[WEATHER], messages=bad)
    assert err.value.status_code == 400 and "tool_use_id" in str(err.value)


def test_anthropic_count_tokens(emu):
    c = client(emu)
    kwargs = dict(model=MODEL, system="Be brief.", messages=[{"role": "user", "content": "Count me"}])
    got = c.messages.count_tokens(**kwargs)
    assert got.input_tokens == sum(b.tokens for b in request_blocks(emu.received[-1].json()))
    assert emu.received[-1].endpoint == "count_tokens"


def test_anthropic_sdk_sees_faults(emu):
    c = client(emu)
    emu.fault("529")
    with pytest.raises(anthropic.APIStatusError) as err:
        c.messages.create(model=MODEL, max_tokens=16, messages=[{"role": "user", "content": "x"}])
    assert err.value.status_code == 529
    emu.fault("error_event", after_events=2)
    with pytest.raises(anthropic.APIStatusError) as err:
        with c.messages.stream(model=MODEL, max_tokens=16,
                               messages=[{"role": "user", "content": "x"}]) as s:
            s.get_final_message()
    assert "Overloaded" in str(err.value)


def test_openai_chat_plain_and_cached(emu):
    o = oai(emu)
    messages = [{"role": "system", "content": LONG}, {"role": "user", "content": "Hello"}]
    first = o.chat.completions.create(model="gpt-4.1", messages=messages)
    second = o.chat.completions.create(model="gpt-4.1", messages=messages)
    assert first.choices[0].message.content == "Hello from the scalpel emulator."
    assert first.choices[0].finish_reason == "stop"
    assert first.usage.prompt_tokens_details.cached_tokens == 0
    assert second.usage.prompt_tokens_details.cached_tokens == emu.bills[-1].cache_read > 1024
    assert second.usage.prompt_tokens == first.usage.prompt_tokens
    assert emu.received[0].headers["authorization"] == "Bearer sk-test"


def test_openai_chat_streaming_tool_calls(emu):
    o = oai(emu)
    emu.set_script(Script(main=[parallel(ToolCall("get_weather", {"city": "Paris"}),
                                         ToolCall("get_weather", {"city": "Oslo"})), say("Done.")]))
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": WEATHER["input_schema"]}}]
    chunks = list(o.chat.completions.create(model="gpt-4.1", messages=[{"role": "user", "content": "w?"}],
                                            tools=tools, stream=True, stream_options={"include_usage": True}))
    calls: dict[int, dict] = {}
    for ch in chunks:
        for choice in ch.choices:
            for tc in choice.delta.tool_calls or []:
                slot = calls.setdefault(tc.index, {"id": None, "name": None, "args": ""})
                slot["id"] = tc.id or slot["id"]
                slot["name"] = (tc.function.name if tc.function and tc.function.name else slot["name"])
                slot["args"] += tc.function.arguments or "" if tc.function else ""
    assert [json.loads(c["args"])["city"] for c in calls.values()] == ["Paris", "Oslo"]
    assert chunks[-1].usage is not None and chunks[-1].usage.prompt_tokens == emu.bills[-1].prompt_tokens
    history = [{"role": "user", "content": "w?"},
               {"role": "assistant", "content": None, "tool_calls": [
                   {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["args"]}}
                   for c in calls.values()]}]
    history += [{"role": "tool", "tool_call_id": c["id"], "content": "cold"} for c in calls.values()]
    done = o.chat.completions.create(model="gpt-4.1", messages=history, tools=tools)
    assert done.choices[0].message.content == "Done."
    with pytest.raises(openai.BadRequestError):
        o.chat.completions.create(model="gpt-4.1", messages=history[:2] + [{"role": "user", "content": "x"}])


def test_openai_responses_plain_and_streaming(emu):
    o = oai(emu)
    r1 = o.responses.create(model="gpt-4.1", instructions=LONG, input="Hello")
    assert r1.output_text == "Hello from the scalpel emulator."
    assert r1.usage.input_tokens_details.cached_tokens == 0
    with o.responses.stream(model="gpt-4.1", instructions=LONG, input="Hello") as stream:
        deltas = [e.delta for e in stream if e.type == "response.output_text.delta"]
        final = stream.get_final_response()
    assert "".join(deltas) == "Hello from the scalpel emulator."
    assert final.usage.input_tokens_details.cached_tokens == emu.bills[-1].cache_read > 1024


def test_openai_responses_function_calls(emu):
    o = oai(emu)
    emu.set_script(Script(main=[parallel(ToolCall("get_weather", {"city": "Paris"})), say("It is cold.")]))
    tools = [{"type": "function", "name": "get_weather", "parameters": WEATHER["input_schema"]}]
    r1 = o.responses.create(model="gpt-4.1", input=[{"role": "user", "content": "w?"}], tools=tools)
    (fc,) = [i for i in r1.output if i.type == "function_call"]
    assert fc.name == "get_weather" and json.loads(fc.arguments) == {"city": "Paris"}
    items = [{"role": "user", "content": "w?"}, {"type": "function_call", "call_id": fc.call_id,
                                                 "name": fc.name, "arguments": fc.arguments},
             {"type": "function_call_output", "call_id": fc.call_id, "output": "cold"}]
    r2 = o.responses.create(model="gpt-4.1", input=items, tools=tools)
    assert r2.output_text == "It is cold."
    with pytest.raises(openai.BadRequestError):
        o.responses.create(model="gpt-4.1", input=[items[0], items[2]], tools=tools)
