"""The usage tap reads the provider's counts from every response shape, chunked any way."""

from __future__ import annotations

import gzip
import json
import zlib

from hypothesis import given, settings
from hypothesis import strategies as st

from scalpel_desktop.wire.usage import Usage
from scalpel_desktop.wire.usage_tap import UsageTap, tap_body


def sse(*events: tuple[str | None, dict | str], crlf: bool = False) -> bytes:
    nl = "\r\n" if crlf else "\n"
    out = []
    for name, data in events:
        payload = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
        head = f"event: {name}{nl}" if name else ""
        out.append(f"{head}data: {payload}{nl}{nl}")
    return "".join(out).encode()


ANTHROPIC_STREAM = sse(
    ("message_start", {"type": "message_start", "message": {
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "content": [],
        "stop_reason": None, "usage": {
            "input_tokens": 12, "cache_creation_input_tokens": 3000, "cache_read_input_tokens": 45000,
            "cache_creation": {"ephemeral_5m_input_tokens": 1000, "ephemeral_1h_input_tokens": 2000},
            "output_tokens": 1}}}),
    ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
    ("ping", {"type": "ping"}),
    ("content_block_delta", {"type": "content_block_delta", "index": 0,
                             "delta": {"type": "text_delta", "text": "the word usage appears in text"}}),
    ("some_future_event", {"type": "some_future_event", "x": [1, 2, 3]}),
    ("content_block_stop", {"type": "content_block_stop", "index": 0}),
    ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                       "usage": {"output_tokens": 87, "input_tokens": None}}),
    ("message_stop", {"type": "message_stop"}),
)
ANTHROPIC_EXPECTED = Usage(input_tokens=12, cache_write_5m=1000, cache_write_1h=2000, cache_read=45000, output_tokens=87)

CHAT_STREAM = sse(
    (None, {"id": "c1", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": "hi"}}], "usage": None}),
    (None, {"id": "c1", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}], "usage": None}),
    (None, {"id": "c1", "object": "chat.completion.chunk", "choices": [], "usage": {
        "prompt_tokens": 2100, "completion_tokens": 40, "total_tokens": 2140,
        "prompt_tokens_details": {"cached_tokens": 2048}}}),
    (None, "[DONE]"),
)
CHAT_EXPECTED = Usage(input_tokens=52, cache_read=2048, output_tokens=40)

RESPONSES_STREAM = sse(
    ("response.created", {"type": "response.created", "response": {"id": "r1", "status": "in_progress", "usage": None, "error": None}}),
    ("response.output_text.delta", {"type": "response.output_text.delta", "delta": "hello"}),
    ("response.completed", {"type": "response.completed", "response": {"id": "r1", "status": "completed", "usage": {
        "input_tokens": 3000, "input_tokens_details": {"cached_tokens": 1024}, "output_tokens": 9,
        "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 3009}}}),
)
RESPONSES_EXPECTED = Usage(input_tokens=1976, cache_read=1024, output_tokens=9)

CASES = [
    (ANTHROPIC_STREAM, ANTHROPIC_EXPECTED),
    (CHAT_STREAM, CHAT_EXPECTED),
    (RESPONSES_STREAM, RESPONSES_EXPECTED),
]


def test_each_stream_shape_whole():
    for body, expected in CASES:
        assert tap_body(body, "text/event-stream; charset=utf-8").usage() == expected


def test_crlf_line_endings():
    body = ANTHROPIC_STREAM.replace(b"\n", b"\r\n")
    assert tap_body(body, "text/event-stream").usage() == ANTHROPIC_EXPECTED


@settings(max_examples=60, deadline=None)
@given(case=st.sampled_from(range(len(CASES))), cuts=st.lists(st.integers(min_value=0, max_value=4000), max_size=40))
def test_any_split_gives_the_same_usage(case, cuts):
    body, expected = CASES[case]
    points = sorted({c % (len(body) + 1) for c in cuts})
    tap = UsageTap("text/event-stream")
    prev = 0
    for p in points + [len(body)]:
        tap.feed(body[prev:p])
        prev = p
    assert tap.usage() == expected


def test_one_byte_at_a_time():
    assert tap_body(ANTHROPIC_STREAM, "text/event-stream", chunk=1).usage() == ANTHROPIC_EXPECTED


def test_stream_without_final_blank_line():
    body = ANTHROPIC_STREAM.rstrip(b"\n")
    assert tap_body(body, "text/event-stream", chunk=7).usage() == ANTHROPIC_EXPECTED


def test_gzip_and_deflate_streams_are_decompressed_from_a_copy():
    for body, expected in CASES:
        gz = gzip.compress(body)
        assert tap_body(gz, "text/event-stream", "gzip", chunk=13).usage() == expected
        zl = zlib.compress(body)
        assert tap_body(zl, "text/event-stream", "deflate", chunk=5).usage() == expected
        co = zlib.compressobj(wbits=-zlib.MAX_WBITS)
        raw = co.compress(body) + co.flush()
        assert tap_body(raw, "text/event-stream", "deflate", chunk=1).usage() == expected


def test_json_bodies():
    anthropic = {"id": "msg", "type": "message", "content": [{"type": "text", "text": "x"}],
                 "usage": {"input_tokens": 5, "cache_creation_input_tokens": 7, "cache_read_input_tokens": 100, "output_tokens": 3}}
    chat = {"id": "c", "object": "chat.completion", "choices": [],
            "usage": {"prompt_tokens": 50, "completion_tokens": 5, "prompt_tokens_details": {"cached_tokens": 0}}}
    responses = {"id": "r", "object": "response", "output": [],
                 "usage": {"input_tokens": 40, "input_tokens_details": {"cached_tokens": 10}, "output_tokens": 2}}
    got = tap_body(json.dumps(anthropic).encode(), "application/json", chunk=3).usage()
    assert got == Usage(input_tokens=5, cache_write_5m=7, cache_read=100, output_tokens=3)
    assert tap_body(json.dumps(chat).encode(), "application/json").usage() == Usage(input_tokens=50, output_tokens=5)
    assert tap_body(gzip.compress(json.dumps(responses).encode()), "application/json", "gzip", chunk=4).usage() == Usage(
        input_tokens=30, cache_read=10, output_tokens=2
    )


def test_errors_are_labelled_and_carry_no_usage():
    err = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    tap = tap_body(json.dumps(err).encode(), "application/json")
    assert tap.usage() is None and tap.error == "overloaded_error"
    mid = ANTHROPIC_STREAM.split(b"event: message_delta")[0] + sse(("error", err))
    tap = tap_body(mid, "text/event-stream", chunk=11)
    assert tap.error == "overloaded_error"
    # the input side was already known from message_start
    assert tap.usage().cache_read == 45000
    oai = {"error": {"message": "bad", "type": "invalid_request_error", "code": None}}
    assert tap_body(json.dumps(oai).encode(), "application/json").error == "invalid_request_error"


def test_garbage_never_raises():
    for ct, enc, body in [
        ("text/event-stream", "", b"data: {not json\n\n\xff\xfe\n\n"),
        ("application/json", "", b"{\"usage\": "),
        ("text/event-stream", "gzip", b"not gzip at all"),
        ("application/json", "br-unknown", b"{}"),
        ("text/html", "", b"<html>usage</html>"),
        ("", "", b""),
    ]:
        tap = tap_body(body, ct, enc, chunk=2)
        assert tap.usage() is None


def test_count_tokens_answer_is_not_usage():
    assert tap_body(b'{"input_tokens": 1234}', "application/json").usage() is None


def test_the_message_id_and_its_diagnostics_are_read_from_stream_and_json():
    from scalpel_desktop.wire.usage_tap import ABSENT

    assert tap_body(ANTHROPIC_STREAM, "text/event-stream", chunk=7).message() == ("msg_1", ABSENT)
    diag = {"cache_miss_reason": {"type": "model_changed", "cache_missed_input_tokens": 900}}
    start = {"type": "message_start", "message": {"id": "msg_2", "type": "message", "content": [],
                                                  "usage": {"input_tokens": 3}, "diagnostics": diag}}
    stream = sse(("message_start", start), ("message_stop", {"type": "message_stop"}))
    assert tap_body(stream, "text/event-stream", chunk=5).message() == ("msg_2", diag)
    body = json.dumps({"id": "msg_3", "type": "message", "usage": {"input_tokens": 1}, "diagnostics": None}).encode()
    assert tap_body(body, "application/json").message() == ("msg_3", None)
    assert tap_body(gzip.compress(body), "application/json", "gzip", chunk=9).message() == ("msg_3", None)
    chat = json.dumps({"id": "chatcmpl-1", "object": "chat.completion", "usage": {"prompt_tokens": 1}}).encode()
    assert tap_body(chat, "application/json").message() == (None, ABSENT)


def test_decoded_reads_what_it_can_and_says_none_otherwise():
    from scalpel_desktop.wire.usage_tap import decoded

    body = b'{"type":"error","error":{"message":"diagnostics: Extra inputs are not permitted"}}'
    assert decoded(body, "") == decoded(body, "identity") == body
    assert decoded(gzip.compress(body), "gzip") == body
    assert decoded(zlib.compress(body), "deflate") == body
    assert decoded(b"\x00garbage", "gzip") is None
    assert decoded(body, "gzip, br") is None
    assert decoded(body, "compress") is None


def test_the_stop_reason_is_read_from_stream_and_json():
    stream = sse(("message_start", {"type": "message_start", "message": {"id": "msg_1", "stop_reason": None,
                                                                       "usage": {"input_tokens": 5}}}),
                 ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use"},
                                    "usage": {"output_tokens": 3}}))
    for chunk in (0, 7):
        assert tap_body(stream, "text/event-stream", chunk=chunk).stop_reason == "tool_use"
    body = json.dumps({"type": "message", "id": "msg_2", "stop_reason": "end_turn", "usage": {"input_tokens": 1}})
    assert tap_body(body.encode(), "application/json").stop_reason == "end_turn"
    assert tap_body(b'{"type":"error","error":{"type":"overloaded_error"}}', "application/json").stop_reason == ""
