"""The APIs' request rules: each rule refuses its body with the API's message, and what
real clients send (../shared/corpus/wire) passes."""

from __future__ import annotations

import copy

import pytest

from scalpel_desktop.wire import api_rules as rules
from scalpel_desktop.wire.api_rules import ApiError, CacheControlError
from tests.support import corpus_dir
from tests.wire.test_view import corpus_bodies

CC5, CC1 = {"type": "ephemeral"}, {"type": "ephemeral", "ttl": "1h"}


def use(tid, name="Read"):
    return {"type": "tool_use", "id": tid, "name": name, "input": {}}


def result(tid, content="out"):
    return {"type": "tool_result", "tool_use_id": tid, "content": content}


def text(t="x", cc=None):
    return {"type": "text", "text": t, **({"cache_control": cc} if cc else {})}


def body(messages=None, **top):
    b = {"model": "claude-sonnet-4-5", "max_tokens": 64,
         "messages": messages if messages is not None else [{"role": "user", "content": "hi"}]}
    b.update(top)
    return {k: v for k, v in b.items() if v is not ...}


def refused(b, **kw) -> str:
    with pytest.raises(ApiError) as e:
        rules.validate_messages_body(b, **kw)
    assert (e.value.status, e.value.error_type) == (400, "invalid_request_error")
    return e.value.message


PAIR = [{"role": "user", "content": "go"}, {"role": "assistant", "content": [use("t1")]},
        {"role": "user", "content": [result("t1")]}]


# ---------------------------------------------------------------- Messages: refused

@pytest.mark.parametrize("b,message", [
    ([], "Request body must be a JSON object"),
    (body(model=...), "model: Field required"),
    (body(model=""), "model: Field required"),
    (body(max_tokens=...), "max_tokens: Field required"),
    (body(max_tokens=True), "max_tokens: Field required"),
    (body(max_tokens=0), "max_tokens: Input should be greater than or equal to 1"),
    (body(stream="yes"), "stream: Input should be a valid boolean"),
    (body(messages=...), "messages: Field required"),
    (body(messages=[]), "messages: at least one message is required"),
    (body(tools={"name": "Read"}), "tools: Input should be a valid list"),
    (body(tools=["Read"]), "tools.0: Input should be an object"),
    (body(tools=[{"input_schema": {}}]), "tools.0.name: Field required"),
    (body(tools=[{"name": "A", "input_schema": {}}, {"name": "A", "input_schema": {}}]),
     "tools: Tool names must be unique."),
    (body(tools=[{"name": "A"}]), "tools.0.custom.input_schema: Field required"),
    (body(system=5), "system: Input should be a valid string or list"),
    (body(system=[{"type": "image"}]), "system.0.type: Input should be 'text'"),
    (body(system=[text(""),]), "system.0.text: text content blocks must be non-empty"),
    (body(["hi"]), "messages.0: Input should be an object"),
    (body([{"role": "tool", "content": "x"}]), "messages.0.role: Input should be 'user' or 'assistant'"),
    (body([{"role": "user", "content": ""}]),
     "messages: all messages must have non-empty content except for the optional final assistant message"),
    (body([{"role": "assistant", "content": []}, {"role": "user", "content": "x"}]),
     "messages: all messages must have non-empty content except for the optional final assistant message"),
    (body([{"role": "user", "content": None}]), "messages.0.content: Input should be a valid string or list"),
    (body([{"role": "user", "content": [{"text": "x"}]}]),
     "messages.0.content.0: Input should be a content block object with a type"),
    (body([{"role": "user", "content": [{"type": "text"}]}]), "messages.0.content.0.text: Field required"),
    (body([{"role": "user", "content": [text("")]}]), "messages.0.content.0.text: text content blocks must be non-empty"),
    (body([{"role": "user", "content": [use("t1")]}]), "messages.0.content.0: tool_use blocks can only be in assistant messages"),
    (body([{"role": "user", "content": "go"}, {"role": "assistant", "content": [{"type": "tool_use", "name": "R"}]}]),
     "messages.1.content.0.id: Field required"),
    (body([{"role": "user", "content": "go"}, {"role": "assistant", "content": [use("t1"), use("t1")]}]),
     "messages.1.content.1: `tool_use` ids must be unique"),
    (body([{"role": "user", "content": "go"}, {"role": "assistant", "content": [text(), result("t1")]}]),
     "messages.1.content.1: tool_result blocks can only be in user messages"),
    (body([{"role": "user", "content": [{"type": "tool_result", "content": "x"}]}]),
     "messages.0.content.0.tool_use_id: Field required"),
])
def test_each_messages_rule_refuses_with_the_apis_message(b, message):
    assert refused(b) == message


def test_a_tool_result_answering_nothing_in_the_previous_turn():
    msgs = copy.deepcopy(PAIR) + [{"role": "assistant", "content": [text("done")]},
                                  {"role": "user", "content": [result("t1")]}]  # t1 was answered already
    assert refused(body(msgs)) == (
        "messages.4.content.0: unexpected `tool_use_id` found in `tool_result` blocks: t1. Each `tool_result` "
        "block must have a corresponding `tool_use` block in the previous message.")


def test_a_tool_use_left_unanswered():
    msgs = [{"role": "user", "content": "go"}, {"role": "assistant", "content": [use("t1"), use("t2")]},
            {"role": "user", "content": [result("t1")]}]
    assert refused(body(msgs)) == (
        "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: t2. Each "
        "`tool_use` block must have a corresponding `tool_result` block in the next message.")


def test_a_user_text_instead_of_the_results_leaves_the_use_unanswered():
    msgs = [{"role": "user", "content": "go"}, {"role": "assistant", "content": [use("t1")]},
            {"role": "user", "content": "no"}]
    assert refused(body(msgs)).startswith("messages.1: `tool_use` ids were found without `tool_result` blocks")


# ---------------------------------------------------------------- cache markers

@pytest.mark.parametrize("cc,where", [({"type": "persistent"}, ("messages.0.content.0.cache_control.type: Input "
                                       "should be 'ephemeral'")),
                                      ({"type": "ephemeral", "ttl": "24h"},
                                       "messages.0.content.0.cache_control.ttl: Input should be '5m' or '1h'")])
def test_a_bad_marker_names_where_it_is(cc, where):
    assert refused(body([{"role": "user", "content": [text("x", cc)]}])) == where


def test_five_markers_are_one_too_many():
    msgs = [{"role": "user", "content": [text(str(i), CC5) for i in range(3)]}]
    tools = [{"name": "A", "input_schema": {}, "cache_control": CC5}]
    rules.validate_messages_body(body(msgs, tools=tools))  # four: fine
    assert refused(body(msgs, tools=tools, system=[text("s", CC5)])) == (
        "A maximum of 4 blocks with cache_control may be provided. Found 5.")


def test_a_top_level_marker_counts_as_one_of_the_four():
    msgs = [{"role": "user", "content": [text(str(i), CC5) for i in range(4)]}]
    assert "Found 5." in refused(body(msgs, cache_control=CC5))
    assert refused(body(cache_control={"type": "x"})) == "cache_control.type: Input should be 'ephemeral'"


ONE_H_AFTER_5M = ("a ttl='1h' cache_control block must not come after a ttl='5m' cache_control block. Note that "
                  "blocks are processed in the following order: `tools`, `system`, `messages`.")


def test_1h_after_5m_in_processing_order_tools_system_messages():
    msgs = [{"role": "user", "content": [text("m", CC1)]}]
    assert refused(body(msgs, system=[text("s", CC5)])) == ONE_H_AFTER_5M
    tools = [{"name": "A", "input_schema": {}, "cache_control": CC5}]
    assert refused(body(tools=tools, system=[text("s", CC1)])) == ONE_H_AFTER_5M
    # 1h first, then 5m, is the allowed order
    rules.validate_messages_body(body([{"role": "user", "content": [text("m", CC5)]}],
                                      tools=[{"name": "A", "input_schema": {}, "cache_control": CC1}],
                                      system=[text("s", CC1)]))


def test_check_breakpoints_directly():
    rules.check_breakpoints(["1h", "1h", "5m", "5m"])
    rules.check_breakpoints([])
    with pytest.raises(CacheControlError, match="Found 5"):
        rules.check_breakpoints(["1h"] * 5)
    with pytest.raises(CacheControlError, match="must not come after"):
        rules.check_breakpoints(["5m", "1h"])


# ---------------------------------------------------------------- Messages: accepted

@pytest.mark.parametrize("msgs", [
    PAIR,
    # consecutive same-role messages are one turn: uses and results may be split across them
    [{"role": "user", "content": "go"}, {"role": "assistant", "content": [use("a")]},
     {"role": "assistant", "content": [use("b")]}, {"role": "user", "content": [result("a")]},
     {"role": "user", "content": [result("b"), text("next")]}],
    # system messages inside messages, an empty one included (Claude Code 2.1.332 after /compact)
    [{"role": "system", "content": []}, {"role": "user", "content": "go"},
     {"role": "assistant", "content": [use("t1")]}, {"role": "system", "content": "note"},
     {"role": "user", "content": [result("t1")]}],
    # a final assistant message may be empty (prefill), and may end on an unanswered tool use
    [{"role": "user", "content": "go"}, {"role": "assistant", "content": ""}],
    [{"role": "user", "content": "go"}, {"role": "assistant", "content": [use("t1")]}],
    # thinking, tool_reference and unknown blocks; a result with a block list and is_error
    [{"role": "user", "content": "go"},
     {"role": "assistant", "content": [{"type": "thinking", "thinking": "", "signature": "s"}, use("t1", "ToolSearch")]},
     {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "is_error": False,
                                   "content": [{"type": "tool_reference", "tool_name": "mcp__x__y"}]}]}],
])
def test_what_real_clients_send_is_accepted(msgs):
    rules.validate_messages_body(body(msgs))


def test_unknown_top_level_fields_string_system_and_server_tools_are_accepted():
    rules.validate_messages_body(body(system="you are", context_management={"edits": []},
                                      output_config={"effort": "high"}, stream=True,
                                      tools=[{"type": "web_search_20250305", "name": "web_search"}]))


def test_count_tokens_needs_no_max_tokens():
    b = body(max_tokens=...)
    rules.validate_messages_body(b, count_tokens=True)
    assert refused(b) == "max_tokens: Field required"


@pytest.mark.corpus
def test_every_body_real_claude_code_sent_is_accepted():
    """The captured requests whole; the redacted proxy records (which keep messages and
    system but drop max_tokens and the tool schemas) for their message rules."""
    corpus_dir("wire")
    bodies = corpus_bodies()
    whole = [(n, b) for n, b in bodies if "max_tokens" in b]
    records = [(n, b) for n, b in bodies if "max_tokens" not in b]
    assert len(whole) >= 70 and len(records) >= 50
    for name, b in whole + [(n, {"model": b["model"], "max_tokens": 1, "system": b.get("system"),
                                 "messages": b["messages"]}) for n, b in records]:
        try:
            rules.validate_messages_body(b)
        except ApiError as e:  # pragma: no cover - the failure message
            pytest.fail(f"{name}: {e.message}")


# ---------------------------------------------------------------- error bodies

def test_error_bodies_in_each_apis_shape():
    e = rules.bad("messages: Field required")
    assert e.anthropic_body() == {"type": "error", "error": {"type": "invalid_request_error",
                                                             "message": "messages: Field required"}}
    assert e.openai_body() == {"error": {"message": "messages: Field required", "type": "invalid_request_error",
                                         "param": None, "code": None}}


# ---------------------------------------------------------------- OpenAI Chat

def chat(messages=..., **top):
    b = {"model": "gpt-4.1", "messages": [{"role": "user", "content": "hi"}] if messages is ... else messages}
    b.update(top)
    return {k: v for k, v in b.items() if v is not ...}


def chat_refused(b) -> str:
    with pytest.raises(ApiError) as e:
        rules.validate_chat_body(b)
    return e.value.message


CALL = {"role": "assistant", "content": None,
        "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}


@pytest.mark.parametrize("b,message", [
    ("[]", "We could not parse the JSON body of your request."),
    (chat(model=...), "you must provide a model parameter"),
    (chat(messages=...) | {"messages": None}, "Missing required parameter: 'messages'."),
    (chat([]), "[] is too short - 'messages'"),
    (chat([{"role": "function", "content": "x"}]), "Invalid value for 'messages[0].role'."),
    (chat([{"role": "user", "content": "hi"}, {"role": "tool", "tool_call_id": "call_1", "content": "x"}]),
     "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'."),
    (chat([{"role": "user", "content": "hi"}, CALL, {"role": "user", "content": "next"}]),
     ("An assistant message with 'tool_calls' must be followed by tool messages responding to each "
     "'tool_call_id'. The following tool_call_ids did not have response messages: call_1")),
])
def test_each_chat_rule_refuses_with_the_apis_message(b, message):
    assert chat_refused(b) == message


def test_chat_accepts_answered_calls_a_pending_final_call_and_developer_messages():
    rules.validate_chat_body(chat([{"role": "developer", "content": "be brief"}, {"role": "user", "content": "hi"},
                                   CALL, {"role": "tool", "tool_call_id": "call_1", "content": "out"},
                                   {"role": "assistant", "content": "done"}]))
    rules.validate_chat_body(chat([{"role": "user", "content": "hi"}, CALL]))


def test_chat_a_call_answered_twice_is_refused():
    answer = {"role": "tool", "tool_call_id": "call_1", "content": "out"}
    assert "must be a response to a preceeding" in chat_refused(chat([{"role": "user", "content": "hi"},
                                                                       CALL, answer, answer]))


# ---------------------------------------------------------------- OpenAI Responses

def test_responses_rules():
    with pytest.raises(ApiError, match=r"^Missing required parameter: 'model'.$"):
        rules.validate_responses_body({"input": "hi"})
    with pytest.raises(ApiError, match="Invalid type for 'input': expected a string or an array."):
        rules.validate_responses_body({"model": "gpt-5", "input": {"x": 1}})
    with pytest.raises(ApiError, match=r"Invalid type for 'input\[\]': expected an object."):
        rules.validate_responses_body({"model": "gpt-5", "input": ["hi"]})
    with pytest.raises(ApiError, match="No tool call found for function call output with call_id c9."):
        rules.validate_responses_body({"model": "gpt-5", "input": [
            {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c9", "output": "x"}]})


def test_responses_accepts_a_string_input_answered_calls_and_outputs_after_a_previous_response():
    rules.validate_responses_body({"model": "gpt-5", "input": "hi"})
    rules.validate_responses_body({"model": "gpt-5"})
    rules.validate_responses_body({"model": "gpt-5", "input": [
        {"role": "user", "content": "go"},
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "x"}]})
    # the call lives in the stored previous response
    rules.validate_responses_body({"model": "gpt-5", "previous_response_id": "resp_1", "input": [
        {"type": "function_call_output", "call_id": "c1", "output": "x"}]})
