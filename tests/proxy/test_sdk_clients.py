"""The official SDKs through the proxy: answers intact, bytes identical, usage tapped.

The client side is recorded with an httpx event hook (what the SDK sent);
the upstream side by the emulator's own record (what arrived). Neither is
the proxy's own account.
"""

from __future__ import annotations


import anthropic
import openai

from tests.proxy.conftest import SENTINEL_KEY, SentRecorder, wait_for


def _assert_identical(rec: SentRecorder, emu, n: int):
    sent = rec.requests[-n:]
    got = emu.received[-n:]
    assert len(got) == n
    for (method, path, headers, body), r in zip(sent, got):
        if path.startswith("/openai/"):
            path = path[len("/openai"):]
        assert r.method == method and r.path_qs == path
        assert r.body == body, "the upstream must receive the client's exact bytes"
        for name in ("x-api-key", "authorization", "anthropic-version", "anthropic-beta", "user-agent", "content-type"):
            if name in headers:
                assert r.headers.get(name) == headers[name], name


def _anthropic(proxy, rec):
    return anthropic.Anthropic(
        base_url=proxy.url, api_key=SENTINEL_KEY, max_retries=0,
        http_client=anthropic.DefaultHttpxClient(event_hooks={"request": [rec]}),
    )


def _openai(proxy, rec):
    return openai.OpenAI(
        base_url=proxy.openai_url, api_key="sk-SENTINEL-openai", max_retries=0,
        http_client=openai.DefaultHttpxClient(event_hooks={"request": [rec]}),
    )


MESSAGES = [{"role": "user", "content": "Say hello. ünïcödé ✓ and \"quotes\""}]


def test_anthropic_plain_and_streaming(proxy, emu):
    rec = SentRecorder()
    client = _anthropic(proxy, rec)
    msg = client.messages.create(model="claude-sonnet-4-6", max_tokens=100, messages=MESSAGES)
    assert msg.content and msg.usage.input_tokens > 0
    direct_usage = emu.received[-1].usage
    assert msg.usage.input_tokens == direct_usage.input_tokens
    _assert_identical(rec, emu, 1)

    with client.messages.stream(
        model="claude-sonnet-4-6", max_tokens=100, messages=MESSAGES,
        system=[{"type": "text", "text": "S" * 5000, "cache_control": {"type": "ephemeral"}}],
    ) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert text and final.usage.output_tokens > 0
    _assert_identical(rec, emu, 1)
    bill = emu.received[-1].usage
    assert wait_for(lambda: proxy.runtime.status()["requests"] == 2, timeout=5.0)
    st = proxy.runtime.status()
    assert st["tokens_in"] == direct_usage.prompt_tokens + bill.prompt_tokens
    assert st["tokens_out"] == direct_usage.output_tokens + bill.output_tokens
    assert st["errors"] == 0

    count = client.messages.count_tokens(model="claude-sonnet-4-6", messages=MESSAGES)
    assert count.input_tokens > 0
    _assert_identical(rec, emu, 1)


def test_openai_chat_and_responses_plain_and_streaming(proxy, emu):
    rec = SentRecorder()
    client = _openai(proxy, rec)
    chat = client.chat.completions.create(model="gpt-4.1", messages=MESSAGES)
    assert chat.choices[0].message.content and chat.usage.prompt_tokens > 0
    _assert_identical(rec, emu, 1)
    assert emu.received[-1].path == "/v1/chat/completions"

    chunks = list(client.chat.completions.create(
        model="gpt-4.1", messages=MESSAGES, stream=True, stream_options={"include_usage": True}))
    streamed_usage = [c.usage for c in chunks if c.usage]
    assert streamed_usage and streamed_usage[-1].completion_tokens > 0
    _assert_identical(rec, emu, 1)

    resp = client.responses.create(model="gpt-4.1", input="Say hello ✓")
    assert resp.output_text and resp.usage.input_tokens > 0
    _assert_identical(rec, emu, 1)

    events = list(client.responses.create(model="gpt-4.1", input="Say hello ✓", stream=True))
    done = [e for e in events if e.type == "response.completed"]
    assert done and done[0].response.usage.output_tokens > 0
    _assert_identical(rec, emu, 1)

    assert wait_for(lambda: proxy.runtime.status()["requests"] == 4, timeout=5.0)
    bills = emu.bills[-4:]
    st = proxy.runtime.status()
    assert st["tokens_in"] == sum(b.prompt_tokens for b in bills)
    assert st["tokens_out"] == sum(b.output_tokens for b in bills)


def test_usage_lands_in_the_ledger(proxy, emu):
    import sqlite3

    from scalpel_desktop.paths import dirs

    rec = SentRecorder()
    client = _anthropic(proxy, rec)
    with client.messages.stream(model="claude-sonnet-4-6", max_tokens=50, messages=MESSAGES) as s:
        s.until_done()
    bill = emu.received[-1].usage
    ledger = proxy.runtime._ledger
    if ledger is None or not hasattr(ledger, "flush"):
        import pytest

        pytest.skip("ledger writer not wired")
    assert wait_for(lambda: ledger.written >= 1, timeout=5.0)
    ledger.flush()
    conn = sqlite3.connect(dirs().database)
    row = conn.execute(
        "select endpoint, status, input_tokens, cache_read, output_tokens, body_bytes, ttfb_ms, total_ms from requests"
    ).fetchall()[-1]
    assert row[:5] == ("messages", 200, bill.input_tokens, bill.cache_read, bill.output_tokens)
    assert row[5] == len(rec.bodies[-1]) and row[6] is not None and row[7] >= row[6]
