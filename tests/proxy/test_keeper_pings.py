"""proxy/keeper_pings.py: a ping is the request's own bytes but max_tokens and stream; the loop sends it."""

from __future__ import annotations

import json
import time

from scalpel_desktop.emulator.testing import running_emulator
from scalpel_desktop.proxy.keeper_pings import PingLoop, ping_body, ping_headers
from scalpel_desktop.wire.jsoncodec import dumps

MARK = {"type": "ephemeral"}


def body(**over):
    doc = {"model": "claude-sonnet-4-5", "max_tokens": 32000, "tools": [{"name": "Read", "input_schema": {}}],
           "system": [{"type": "text", "text": "sys", "cache_control": MARK}], "tool_choice": {"type": "auto"},
           "output_config": {"effort": "medium"}, "thinking": {"type": "adaptive"},
           "messages": [{"role": "user", "content": [{"type": "text", "text": "ñ é \u2028 hi", "cache_control": MARK}]}],
           "stream": True}
    doc.update(over)
    return doc


def test_only_max_tokens_and_stream_differ():
    doc = body()
    got = json.loads(ping_body(dumps(doc)))
    assert got.pop("max_tokens") == 1 and got.pop("stream") is False
    assert got == {k: v for k, v in doc.items() if k not in ("max_tokens", "stream")}
    assert "stream" not in json.loads(ping_body(dumps({k: v for k, v in doc.items() if k != "stream"})))


def test_what_follows_the_last_marker_is_left_out_and_some_requests_get_no_ping():
    msgs = [{"role": "user", "content": [{"type": "text", "text": "a", "cache_control": MARK}]},
            {"role": "assistant", "content": [{"type": "text", "text": "b"}]},
            {"role": "user", "content": [{"type": "text", "text": "c"}]}]
    assert json.loads(ping_body(dumps(body(messages=msgs))))["messages"] == msgs[:1]
    unmarked = [{"role": "user", "content": [{"type": "text", "text": "a"}]}]
    assert ping_body(dumps(body(messages=unmarked))) is None  # nothing cached: nothing to keep
    assert ping_body(dumps(body(thinking={"type": "enabled", "budget_tokens": 4000}))) is None
    assert ping_body(b"not json") is None and ping_body(b"[]") is None


def test_the_clients_headers_go_with_it_but_those_recomputed():
    got = dict(ping_headers({"x-api-key": "k", "anthropic-version": "2023-06-01", "host": "127.0.0.1:1",
                             "content-length": "99", "accept-encoding": "gzip", "connection": "keep-alive"}))
    assert got == {"x-api-key": "k", "anthropic-version": "2023-06-01"}


def test_the_loop_ticks_and_sends_and_stops():
    seen = []
    with running_emulator() as emu:
        loop = PingLoop(lambda lp: seen.append(time.monotonic()) or (len(seen) == 1 and lp.spawn(send(lp))))
        results = []

        async def send(lp):
            results.append(await lp.send(emu.url + "/v1/messages", [("x-api-key", "k"),
                                                                   ("anthropic-version", "2023-06-01"),
                                                                   ("content-type", "application/json")],
                                         ping_body(dumps(body()))))

        loop.start()
        deadline = time.monotonic() + 5
        while (not results or len(seen) < 3) and time.monotonic() < deadline:
            time.sleep(0.05)
        loop.close()
        assert not loop.running and len(seen) >= 3
        (r,) = results
        assert r.status == 200 and r.usage is not None and r.usage.prompt_tokens > 0  # its usage counts, read
        assert emu.received[-1].json()["max_tokens"] == 1
        gone = PingLoop(lambda lp: None)
        gone.close()  # never started: nothing to stop
