"""The provider's cache diagnosis through the real proxy: the anthropic SDK -> the runtime -> the emulator.

What reached the upstream is the emulator's own record; what the client sent, an httpx event hook; what
was recorded, the ledger itself.
"""

from __future__ import annotations

import json
import sqlite3

import anthropic
import pytest

from scalpel_desktop.config import Config
from scalpel_desktop.exchange import ApiRequest, Decision, Exchange
from scalpel_desktop.paths import dirs
from scalpel_desktop.proxy.diagnostics import Diagnosis
from scalpel_desktop.runtime import Runtime
from scalpel_desktop.wire.cache_diagnosis import BETA
from scalpel_desktop.wire.identity import ConversationKey
from tests.proxy.conftest import SENTINEL_KEY, SentRecorder, wait_for
from tests.proxy.recording_upstream import ANSWER, RecordingUpstream

SYSTEM = [{"type": "text", "text": "You help. " * 600, "cache_control": {"type": "ephemeral"}}]


def _start(emu, on: bool) -> Runtime:
    return Runtime(Config.load(), {"anthropic_upstream": emu.url, "openai_upstream": emu.url,
                                   "cache_diagnostics": on}, port=0).start()


@pytest.fixture
def asking(emu):
    rt = _start(emu, True)
    yield rt
    rt.stop()


def _client(rt, rec, **headers):
    return anthropic.Anthropic(base_url=f"http://127.0.0.1:{rt.port}", api_key=SENTINEL_KEY, max_retries=0,
                               default_headers=headers or None,
                               http_client=anthropic.DefaultHttpxClient(event_hooks={"request": [rec]}))


def _turn(client, messages, session="s-1", model="claude-sonnet-4-5", stream=False):
    args = dict(model=model, max_tokens=40, system=SYSTEM, messages=messages,
                metadata={"user_id": json.dumps({"session_id": session})})
    if stream:
        with client.messages.stream(**args) as s:
            return s.get_final_message()
    return client.messages.create(**args)


def _rows(rt, n):
    ledger = rt._ledger
    assert wait_for(lambda: ledger.written >= n, timeout=10.0)
    ledger.flush()
    conn = sqlite3.connect(dirs().database)
    return conn.execute("select model, status, provider_miss_reason, provider_missed_tokens from requests "
                        "order by id").fetchall()


def test_on_the_beta_and_the_previous_id_reach_the_upstream_and_the_reason_the_ledger(asking, emu):
    rec = SentRecorder()
    client = _client(asking, rec, **{"anthropic-beta": "claude-code-20250219"})
    m1 = [{"role": "user", "content": "first"}]
    r1 = _turn(client, m1)
    got = emu.received[-1]
    sent = rec.bodies[-1]
    assert got.headers["anthropic-beta"] == f"claude-code-20250219,{BETA}"  # the client's own betas first
    assert got.body.startswith(sent[:-1]) and got.json() == {**json.loads(sent),
                                                              "diagnostics": {"previous_message_id": None}}
    m2 = m1 + [{"role": "assistant", "content": r1.content[0].text}, {"role": "user", "content": "second"}]
    r2 = _turn(client, m2, stream=True)
    assert emu.received[-1].json()["diagnostics"] == {"previous_message_id": r1.id}
    assert r2.usage.cache_read_input_tokens > 0  # the field costs the cache nothing
    m3 = m2 + [{"role": "assistant", "content": r2.content[0].text}, {"role": "user", "content": "third"}]
    r3 = _turn(client, m3, model="claude-opus-4-1")  # a model switch
    assert emu.received[-1].json()["diagnostics"] == {"previous_message_id": r2.id}
    named = emu.received[-1].answer["diagnostics"]["cache_miss_reason"]
    assert named["type"] == "model_changed" and r3.diagnostics.cache_miss_reason.type == "model_changed"
    other = _turn(client, [{"role": "user", "content": "elsewhere"}], session="s-2")  # another conversation
    assert emu.received[-1].json()["diagnostics"] == {"previous_message_id": None} and other.id
    rows = _rows(asking, 4)
    assert rows[0][2:] == (None, None)  # a first turn: nothing compared
    assert rows[1][2:] == ("no_divergence", None)
    assert rows[2] == ("claude-opus-4-1", 200, "model_changed", named["cache_missed_input_tokens"])
    assert named["cache_missed_input_tokens"] > 0 and rows[3][2:] == (None, None)
    st = asking.status()["cache_diagnostics"]
    assert st == {"on": True, "refused": {}}


@pytest.mark.parametrize("mode, compress", [("unknown_beta", False), ("unknown_field", True)])
def test_a_refusal_is_sent_again_without_and_turns_it_off_for_that_upstream(asking, emu, mode, compress):
    emu.cache_diagnosis(mode)
    emu.emulator.compress = compress  # (a gzipped 400: read from a decompressed copy)
    rec = SentRecorder()
    client = _client(asking, rec)
    before = len(emu.received)
    r1 = _turn(client, [{"role": "user", "content": "hi"}])
    assert r1.content  # the client sees the 200 only
    first, second = emu.received[before:]
    assert first.status == 400 and "diagnostics" in first.json()
    assert second.status == 200 and second.body == rec.bodies[-1]  # the client's own bytes
    assert BETA not in second.headers.get("anthropic-beta", "")
    refused = asking.status()["cache_diagnostics"]["refused"]
    assert list(refused) == [emu.url] and ("beta" if mode == "unknown_beta" else "'diagnostics'") in \
        refused[emu.url]["reason"]
    _turn(client, [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "x"},
                   {"role": "user", "content": "again"}])
    assert len(emu.received) == before + 3 and emu.received[-1].body == rec.bodies[-1]  # not asked again
    rows = _rows(asking, 2)
    assert [r[1:] for r in rows] == [(200, None, None)] * 2
    # Off and on again: tried once more (the upstream answers it now).
    emu.cache_diagnosis("beta")
    asking.set_settings({"cache_diagnostics": False})
    _turn(client, [{"role": "user", "content": "off"}])
    asking.set_settings({"cache_diagnostics": True})
    _turn(client, [{"role": "user", "content": "on"}])
    assert emu.received[-1].json()["diagnostics"] == {"previous_message_id": None}
    assert asking.status()["cache_diagnostics"]["refused"] == {}
    emu.emulator.compress = False


def test_a_clients_own_400_reaches_it_as_it_came(asking, emu):
    rec = SentRecorder()
    client = _client(asking, rec)
    before = len(emu.received)
    with pytest.raises(anthropic.BadRequestError) as got:
        client.messages.create(model="claude-sonnet-4-5", max_tokens=10, messages=[])
    assert "messages" in str(got.value)
    assert len(emu.received) == before + 1  # not sent twice
    assert asking.status()["cache_diagnostics"]["refused"] == {}


def test_off_the_bytes_are_the_clients_own(emu):
    rt = _start(emu, False)
    try:
        rec = SentRecorder()
        client = _client(rt, rec, **{"anthropic-beta": "claude-code-20250219"})
        r1 = _turn(client, [{"role": "user", "content": "first"}])
        _turn(client, [{"role": "user", "content": "first"}, {"role": "assistant", "content": r1.content[0].text},
                       {"role": "user", "content": "second"}], stream=True)
        for (_, _, headers, body), got in zip(rec.requests[-2:], emu.received[-2:]):
            assert got.body == body and got.headers["anthropic-beta"] == headers["anthropic-beta"]
            assert "diagnostics" not in got.answer
        assert [r[2:] for r in _rows(rt, 2)] == [(None, None)] * 2
        assert rt.status()["cache_diagnostics"] == {"on": False, "refused": {}}
    finally:
        rt.stop()


def test_a_client_that_asks_itself_is_left_alone(asking, emu):
    rec = SentRecorder()
    client = _client(asking, rec)
    beta = client.beta.messages
    r1 = beta.create(model="claude-sonnet-4-5", max_tokens=10, messages=[{"role": "user", "content": "a"}],
                     betas=[BETA], diagnostics={"previous_message_id": None})
    beta.create(model="claude-haiku-4-5", max_tokens=10, messages=[{"role": "user", "content": "a"}],
                betas=[BETA], diagnostics={"previous_message_id": r1.id})
    for (_, _, headers, body), got in zip(rec.requests[-2:], emu.received[-2:]):
        assert got.body == body and got.headers["anthropic-beta"] == headers["anthropic-beta"] == BETA
    assert [r[2] for r in _rows(asking, 2)] == [None, "model_changed"]  # what it was told, kept


# -- when it asks, without the network -------------------------------------------------------------

def _ex(headers=None, body=b'{"model":"m","messages":[]}', endpoint="messages", key=ConversationKey("s"), **kw):
    req = ApiRequest("POST", "/v1/messages", "", "anthropic", endpoint,
                     headers={"anthropic-version": "2023-06-01", **(headers or {})}, body=body, received_at=0.0)
    return Exchange(request=req, key=key, **kw)


def test_plan_asks_only_for_claude_api_messages_and_fails_open():
    on = {"v": True}
    d = Diagnosis(lambda: on["v"], limit=2)
    api = "https://api.anthropic.com"
    ex = _ex()
    assert d.plan(api, ex, ex.request.body).body.endswith(b',"diagnostics":{"previous_message_id":null}}')
    assert d.plan("https://bedrock-runtime.us-east-1.amazonaws.com", ex, ex.request.body) is None
    assert d.plan(api, _ex(endpoint="count_tokens"), b"{}") is None
    assert d.plan(api, _ex(key=None), b"{}") is None
    assert d.plan(api, _ex(decision=Decision("error", "x")), b"{}") is None
    assert d.plan(api, ex, object()) is None  # a body streamed through: never
    own = d.plan(api, ex, b'{"diagnostics":{"previous_message_id":null}}')
    assert own is not None and own.body is None
    d.refuse(api, "it answered 400 naming the beta")
    assert d.plan(api, ex, ex.request.body) is None
    assert list(d.status()["refused"]) == [api]
    on["v"] = False
    assert d.plan(api, ex, ex.request.body) is None and d.status() == {"on": False, "refused": {}}
    # a setting that cannot be read is off
    assert Diagnosis(lambda: 1 / 0).plan(api, ex, ex.request.body) is None


@pytest.mark.parametrize("only_when_asked", [True, False])
def test_a_400_it_cannot_read_is_sent_again_and_off_only_if_it_went_away(only_when_asked):
    def respond(got):  # a 400 in an encoding without a decoder here (brotli is not installed)
        if b"diagnostics" in got.body or not only_when_asked:
            return 400, [("content-type", "application/json"), ("content-encoding", "br")], b"\x8b\x02\x80unread"
        return 200, [("content-type", "application/json")], ANSWER

    with RecordingUpstream(respond) as up:
        rt = Runtime(Config.load(), {"anthropic_upstream": up.url, "cache_diagnostics": True}, port=0).start()
        try:
            rec = SentRecorder()
            client = _client(rt, rec)
            if only_when_asked:
                assert _turn(client, [{"role": "user", "content": "hi"}]).id == "msg_rec"
            else:
                with pytest.raises(anthropic.BadRequestError):
                    _turn(client, [{"role": "user", "content": "hi"}])
            first, second = up.received
            assert b'"diagnostics"' in first.body and second.body == rec.bodies[-1]
            refused = rt.status()["cache_diagnostics"]["refused"]
            assert bool(refused) is only_when_asked  # a 400 that stays is the client's own: still on
        finally:
            rt.stop()
