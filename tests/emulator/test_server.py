"""The emulated upstream over raw HTTP: event order, usage, validation, faults, control routes."""

from __future__ import annotations

import base64
import http.client
import json
import time
import urllib.error

import pytest

from scalpel_desktop import clock
from scalpel_desktop.accounting.cache_model import request_blocks
from scalpel_desktop.emulator.record import RecordedRequest
from scalpel_desktop.emulator.script import Script, ToolCall, call, parallel, say
from scalpel_desktop.emulator.testing import running_emulator
from tests.emulator.helpers import KEY, get, msg_body, parse_sse, post

BIG = "lorem ipsum dolor sit amet " * 400  # ~2,700 rule tokens: above every minimum but 4,096


@pytest.fixture
def emu():
    with running_emulator(min_cacheable=1024) as handle:
        yield handle


def stream(emu, body, headers=KEY, path="/v1/messages?beta=true"):
    status, hdrs, raw = post(emu.url + path, dict(body, stream=True), headers)
    assert status == 200, raw
    assert hdrs["content-type"].startswith("text/event-stream")
    return parse_sse(raw)


def test_sse_event_sequence_text_thinking_and_parallel_tools(emu):
    emu.set_script(Script(main=[parallel(ToolCall("Read", {"file_path": "/a"}),
                                         ToolCall("Bash", {"command": "ls -la"}), text="Looking.")]))
    body = msg_body(thinking={"type": "enabled", "budget_tokens": 1024},
                    tools=[{"name": "Read", "input_schema": {"type": "object"}},
                           {"name": "Bash", "input_schema": {"type": "object"}}])
    events = stream(emu, body)
    names = [e for e, _ in events]
    assert names[0] == "message_start" and names[-2:] == ["message_delta", "message_stop"]
    assert names[1:3] == ["content_block_start", "ping"]
    for event, data in events:
        assert data["type"] == event
    starts = [d for e, d in events if e == "content_block_start"]
    assert [s["content_block"]["type"] for s in starts] == ["thinking", "text", "tool_use", "tool_use"]
    assert [s["index"] for s in starts] == [0, 1, 2, 3]
    # every block: start, deltas, stop, in order, never interleaved
    current = None
    for event, data in events:
        if event == "content_block_start":
            assert current is None
            current = data["index"]
        elif event == "content_block_delta":
            assert data["index"] == current
        elif event == "content_block_stop":
            assert data["index"] == current
            current = None
    deltas = {}
    for e, d in events:
        if e == "content_block_delta":
            deltas.setdefault(d["index"], []).append(d["delta"])
    assert deltas[0][-1]["type"] == "signature_delta" and deltas[0][-1]["signature"]
    assert "".join(d["text"] for d in deltas[1]) == "Looking."
    inputs = [json.loads("".join(d["partial_json"] for d in deltas[i])) for i in (2, 3)]
    assert inputs == [{"file_path": "/a"}, {"command": "ls -la"}]
    ids = [s["content_block"]["id"] for s in starts[2:]]
    assert len(set(ids)) == 2 and all(i.startswith("toolu_") for i in ids)
    delta = events[-2][1]
    assert delta["delta"]["stop_reason"] == "tool_use"
    start_usage = events[0][1]["message"]["usage"]
    bill = emu.bills[-1]
    assert start_usage["input_tokens"] == bill.input_tokens
    assert delta["usage"]["output_tokens"] == bill.output_tokens > 1
    assert emu.received[-1].track == "main" and emu.received[-1].turn == 0


def test_json_answer_and_usage_match_the_cache_model(emu):
    big = [{"type": "text", "text": BIG, "cache_control": {"type": "ephemeral"}}]
    body = msg_body([{"role": "user", "content": big}])
    total = sum(b.tokens for b in request_blocks(body))
    status, hdrs, raw = post(emu.url + "/v1/messages", body, KEY)
    msg = json.loads(raw)
    assert status == 200 and msg["type"] == "message" and msg["role"] == "assistant"
    assert msg["id"].startswith("msg_") and hdrs["request-id"].startswith("req_")
    assert msg["content"] == [{"type": "text", "text": "Hello from the scalpel emulator."}]
    u = msg["usage"]
    assert (u["input_tokens"], u["cache_creation_input_tokens"], u["cache_read_input_tokens"]) == (0, total, 0)
    assert u["cache_creation"] == {"ephemeral_5m_input_tokens": total, "ephemeral_1h_input_tokens": 0}
    _, _, raw2 = post(emu.url + "/v1/messages", body, KEY)
    assert json.loads(raw2)["usage"]["cache_read_input_tokens"] == total
    emu.advance(301)
    _, _, raw3 = post(emu.url + "/v1/messages", body, KEY)
    assert json.loads(raw3)["usage"]["cache_creation_input_tokens"] == total


def test_the_evict_fault_drops_every_entry_and_answers_as_usual(emu):
    big = [{"type": "text", "text": BIG, "cache_control": {"type": "ephemeral"}}]
    body = msg_body([{"role": "user", "content": big}])
    total = sum(b.tokens for b in request_blocks(body))
    post(emu.url + "/v1/messages", body, KEY)
    emu.fault("evict")
    status, _, raw = post(emu.url + "/v1/messages", body, KEY)
    u = json.loads(raw)["usage"]
    assert status == 200 and (u["cache_read_input_tokens"], u["cache_creation_input_tokens"]) == (0, total)
    assert emu.received[-1].fault == "evict"
    _, _, raw = post(emu.url + "/v1/messages", body, KEY)
    assert json.loads(raw)["usage"]["cache_read_input_tokens"] == total  # cached again by the evicted one


def test_clock_file_moves_the_emulator(emu, tmp_path, monkeypatch):
    path = tmp_path / "clock"
    clock.set_offset(path, 0)
    monkeypatch.setenv("SCALPEL_TEST_CLOCK_FILE", str(path))
    body = msg_body([{"role": "user", "content": [{"type": "text", "text": BIG, "cache_control": {"type": "ephemeral"}}]}])
    post(emu.url + "/v1/messages", body, KEY)
    clock.set_offset(path, 3600)
    post(emu.url + "/v1/messages", body, KEY)
    first, second = emu.bills
    assert second.cache_read == 0 and second.cache_write_5m == first.cache_write_5m > 0
    assert emu.received[1].time - emu.received[0].time >= 3600


ERRORS = [
    ({"max_tokens": 10, "messages": [{"role": "user", "content": "x"}]}, "model"),
    ({"model": "m", "messages": [{"role": "user", "content": "x"}]}, "max_tokens"),
    (msg_body([]), "at least one message"),
    (msg_body([{"role": "user", "content": ""}]), "non-empty content"),
    (msg_body([{"role": "user", "content": [{"type": "text", "text": ""}]}]), "must be non-empty"),
    (msg_body([{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_x", "content": "r"}]}]),
     "unexpected `tool_use_id`"),
    (msg_body([{"role": "user", "content": "q"},
               {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_a", "name": "R", "input": {}}]},
               {"role": "user", "content": "no result"}]), "without `tool_result`"),
    (msg_body([{"role": "user", "content": "q"},
               {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_a", "name": "R", "input": {}},
                                                 {"type": "tool_use", "id": "toolu_b", "name": "R", "input": {}}]},
               {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_a", "content": "r"}]}]),
     "toolu_b"),
    (msg_body([{"role": "user", "content": [{"type": "text", "text": f"t{i}", "cache_control": {"type": "ephemeral"}}
                                            for i in range(5)]}]), "maximum of 4"),
    (msg_body([{"role": "user", "content": [
        {"type": "text", "text": "a", "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": "b", "cache_control": {"type": "ephemeral", "ttl": "1h"}}]}]), "ttl='1h'"),
    (msg_body(tools=[{"name": "A", "input_schema": {"type": "object"}},
                     {"name": "A", "input_schema": {"type": "object"}}]), "unique"),
    (msg_body([{"role": "robot", "content": "x"}]), "role"),
]


@pytest.mark.parametrize("body,needle", ERRORS)
def test_invalid_requests_get_400_in_the_api_shape(emu, body, needle):
    status, _, raw = post(emu.url + "/v1/messages", body, KEY)
    err = json.loads(raw)
    assert status == 400
    assert set(err) == {"type", "error"} and err["type"] == "error"
    assert err["error"]["type"] == "invalid_request_error" and needle in err["error"]["message"]
    assert emu.received[-1].status == 400 and emu.received[-1].usage is None


def test_unparsable_json_and_missing_key(emu):
    status, _, raw = post(emu.url + "/v1/messages", b"{nope", KEY)
    assert status == 400 and json.loads(raw)["error"]["type"] == "invalid_request_error"
    status, _, raw = post(emu.url + "/v1/messages", msg_body(), {})
    assert status == 401 and json.loads(raw)["error"]["type"] == "authentication_error"


def test_what_claude_code_sends_is_accepted(emu):
    tool_use = {"type": "tool_use", "id": "toolu_1", "name": "ToolSearch", "input": {"query": "select:WebFetch"}}
    body = msg_body([
        {"role": "user", "content": [{"type": "text", "text": "<system-reminder>x</system-reminder>"},
                                     {"type": "text", "text": "go"}]},
        {"role": "system", "content": "# Environment"},
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "", "signature": "c2ln"}, tool_use]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                      "content": [{"type": "tool_reference", "tool_name": "WebFetch"}]},
                                     {"type": "text", "text": "Tool loaded."}]},
        {"role": "system", "content": "The user hasn't heard from you in a while."},
        {"role": "user", "content": [{"type": "text", "text": "more", "cache_control": {"type": "ephemeral"}}]},
    ], thinking={"type": "adaptive", "display": "omitted"},
        context_management={"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]},
        output_config={"effort": "medium"}, metadata={"user_id": "{}"})
    status, _, raw = post(emu.url + "/v1/messages?beta=true", body, KEY)
    assert status == 200, raw
    msg = json.loads(raw)
    assert msg["content"][0] == {"type": "thinking", "thinking": "", "signature": msg["content"][0]["signature"]}


def test_count_tokens_and_models(emu):
    body = {"model": "claude-sonnet-4-5", "messages": [{"role": "user", "content": "hello"}],
            "system": "be brief"}
    status, _, raw = post(emu.url + "/v1/messages/count_tokens?beta=true", body, KEY)
    assert status == 200
    assert json.loads(raw) == {"input_tokens": sum(b.tokens for b in request_blocks(body))}
    assert emu.received[-1].usage is None and emu.bills == []
    status, raw = get(emu.url + "/v1/models", KEY)
    models = json.loads(raw)
    assert status == 200 and models["data"] and all(m["type"] == "model" for m in models["data"])


@pytest.mark.parametrize("kind,status,etype", [("429", 429, "rate_limit_error"), ("529", 529, "overloaded_error"),
                                               ("overloaded", 529, "overloaded_error"), ("500", 500, "api_error")])
def test_status_faults(emu, kind, status, etype):
    emu.fault(kind, count=2)
    for _ in range(2):
        got, hdrs, raw = post(emu.url + "/v1/messages", msg_body(), KEY)
        assert got == status and json.loads(raw) == {"type": "error", "error": {"type": etype,
                                                                               "message": json.loads(raw)["error"]["message"]}}
        if status in (429, 529):
            assert "retry-after" in hdrs
    got, _, _ = post(emu.url + "/v1/messages", msg_body(), KEY)
    assert got == 200
    assert [r.fault for r in emu.received] == [emu.received[0].fault] * 2 + [None]


def test_error_event_mid_stream(emu):
    emu.fault("error_event", after_events=3)
    events = stream(emu, msg_body())
    names = [e for e, _ in events]
    assert names[0] == "message_start" and names[-1] == "error" and "message_stop" not in names
    assert events[-1][1] == {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    assert len(names) == 4


@pytest.mark.parametrize("after", [0, 3])
def test_dropped_connection(emu, after):
    emu.fault("drop", after_events=after)
    try:
        post(emu.url + "/v1/messages", msg_body(stream=True), KEY)
    except (urllib.error.URLError, http.client.HTTPException, OSError):
        pass
    else:
        pytest.fail("the stream arrived complete")
    assert emu.received[-1].error == "dropped"
    status, _, _ = post(emu.url + "/v1/messages", msg_body(), KEY)
    assert status == 200


def test_slow_stream_with_silence(emu):
    emu.fault("slow", silences=[[2, 0.4]])
    t0 = time.monotonic()
    events = stream(emu, msg_body())
    assert time.monotonic() - t0 >= 0.4
    assert [e for e, _ in events][-1] == "message_stop"


def test_fault_over_http_with_path_filter(emu):
    status, _, raw = post(emu.url + "/_emulator/fault", {"kind": "529", "count": 1, "path": "/v1/chat"})
    assert status == 200 and json.loads(raw)["ok"]
    assert post(emu.url + "/v1/messages", msg_body(), KEY)[0] == 200
    status, _, _ = post(emu.url + "/v1/chat/completions", {"model": "gpt-4.1", "messages": [
        {"role": "user", "content": "hi"}]}, {"authorization": "Bearer k"})
    assert status == 529
    status, _, raw = post(emu.url + "/_emulator/fault", {"kind": "nonsense"})
    assert status == 400 and "unknown fault kind" in json.loads(raw)["error"]


def test_requests_route_returns_the_exact_bytes(emu):
    raw_body = '{"model":"claude-sonnet-4-5","max_tokens":9,"messages":[{"role":"user","content":"caf\u00e9 \u2603"}]}'.encode()
    post(emu.url + "/v1/messages?beta=true&x=1", raw_body, dict(KEY, **{"X-Custom": "Yes"}))
    _, data = get(emu.url + "/_emulator/requests")
    (item,) = json.loads(data)["requests"]
    assert base64.b64decode(item["body_b64"]) == raw_body == emu.received[0].body
    rec = RecordedRequest.from_dict(item)
    assert (rec.path, rec.query, rec.headers["x-custom"]) == ("/v1/messages", "beta=true&x=1", "Yes")
    assert rec.usage == emu.received[0].usage
    post(emu.url + "/_emulator/clear", {})
    assert emu.received == []


def test_clock_route(emu):
    _, _, raw = post(emu.url + "/_emulator/clock", {"advance": 120})
    assert json.loads(raw)["offset"] == 120 == emu.offset


def test_script_route_and_turn_choice(emu, tmp_path):
    status, _, _ = post(emu.url + "/_emulator/script", {"name": "claude_code_session",
                                                        "args": {"workdir": str(tmp_path)}})
    assert status == 200
    tools = [{"name": n, "input_schema": {"type": "object"}} for n in ("Read", "Bash")]
    body = msg_body([{"role": "user", "content": "fix it"}], tools=tools, max_tokens=32000)
    _, _, raw = post(emu.url + "/v1/messages", body, KEY)
    tu = json.loads(raw)["content"][-1]
    assert tu["type"] == "tool_use" and tu["name"] == "Read"
    assert tu["input"] == {"file_path": str(tmp_path.resolve() / "notes.txt")}
    # a side request (no tools) does not consume a turn
    _, _, raw = post(emu.url + "/v1/messages", msg_body([{"role": "user", "content": "title?"}]), KEY)
    assert json.loads(raw)["content"] == [{"type": "text", "text": "OK."}]


def test_stateless_turns_follow_the_history(emu):
    emu.set_script(Script(main=[call("Read", file_path="/x"), say("second")]))
    tools = [{"name": "Read", "input_schema": {"type": "object"}}]
    _, _, raw = post(emu.url + "/v1/messages", msg_body(tools=tools), KEY)
    tu = json.loads(raw)["content"][0]
    history = [{"role": "user", "content": "hello"}, {"role": "assistant", "content": [tu]},
               {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tu["id"], "content": "data"}]}]
    for _ in range(2):  # the same request twice: the same turn (stateless)
        _, _, raw = post(emu.url + "/v1/messages", msg_body(history, tools=tools), KEY)
        assert json.loads(raw)["content"] == [{"type": "text", "text": "second"}]
    _, _, raw = post(emu.url + "/v1/messages", msg_body(history + [
        {"role": "assistant", "content": "second"}, {"role": "user", "content": "again"}], tools=tools), KEY)
    assert json.loads(raw)["content"][0]["name"] == "Read"  # a new prompt starts the track again


def test_unknown_path_is_recorded_404(emu):
    status, _, _ = post(emu.url + "/v1/unknown", {})
    assert status == 404 and emu.received[-1].path == "/v1/unknown"


def test_compressed_json_answers_when_asked():
    import gzip

    with running_emulator(compress=True) as emu:
        status, hdrs, raw = post(emu.url + "/v1/messages", msg_body(), dict(KEY, **{"accept-encoding": "gzip"}))
        assert status == 200 and hdrs.get("content-encoding") == "gzip"
        assert json.loads(gzip.decompress(raw))["type"] == "message"


def test_set_now_moves_the_clock(emu):
    emu.set_now(1_000_000.0)
    assert abs(emu.now() - 1_000_000.0) < 5
    post(emu.url + "/v1/messages", msg_body(), KEY)
    assert abs(emu.received[-1].time - 1_000_000.0) < 5


def test_client_disconnect_mid_stream_is_recorded(emu):
    import socket

    emu.fault("slow", delay=0.1)
    body = json.dumps(msg_body(stream=True)).encode()
    with socket.create_connection(("127.0.0.1", emu.port)) as s:
        s.sendall(b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nx-api-key: k\r\ncontent-type: application/json\r\n"
                  + f"content-length: {len(body)}\r\n\r\n".encode() + body)
        assert b"200" in s.recv(200)
    for _ in range(100):
        if emu.received[-1].error:
            break
        time.sleep(0.05)
    assert emu.received[-1].error == "client disconnected"
