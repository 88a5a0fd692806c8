"""The emulator answers the cache-diagnosis beta's contract: the anthropic SDK's own beta client against it."""

from __future__ import annotations

import json

import anthropic
import pytest

from scalpel_desktop.emulator.diagnostics import Diagnosis, compare, fingerprint
from scalpel_desktop.emulator.testing import running_emulator
from scalpel_desktop.wire.cache_diagnosis import BETA
from tests.emulator.helpers import KEY, parse_sse, post

LONG = "The quick brown fox jumps over the lazy dog. " * 150  # ~1,700 rule tokens: cached
TOOL = {"name": "read", "description": "Read a file", "input_schema": {"type": "object", "properties": {}}}
SYSTEM = [{"type": "text", "text": LONG, "cache_control": {"type": "ephemeral"}}]


@pytest.fixture(scope="module")
def emu():
    with running_emulator(min_cacheable=1024) as handle:
        yield handle


@pytest.fixture
def beta(emu):
    emu.cache_diagnosis("beta")
    return anthropic.Anthropic(base_url=emu.url, api_key="sk-ant-test", max_retries=0).beta.messages


def _create(client, messages, previous, **kw):
    args = {"model": "claude-sonnet-4-5", "max_tokens": 50, "system": SYSTEM, "tools": [TOOL],
            "messages": messages, **kw}
    return client.create(betas=[BETA], diagnostics={"previous_message_id": previous}, **args)


def _reason(msg):
    return None if msg.diagnostics is None else msg.diagnostics.cache_miss_reason


def test_appended_messages_diverge_nowhere_and_each_change_is_named(beta, emu):
    m1 = [{"role": "user", "content": "hello"}]
    r1 = _create(beta, m1, None)
    assert r1.diagnostics is None  # a first turn: nothing to compare
    m2 = m1 + [{"role": "assistant", "content": r1.content}, {"role": "user", "content": "more"}]
    r2 = _create(beta, m2, r1.id)
    assert r2.diagnostics is None and r2.usage.cache_read_input_tokens > 0  # only appended

    # Each change names the first divergence, and the tokens the named request had from there on.
    before = fingerprint(emu.received[-1].json())
    for kw, kind in (({"model": "claude-opus-4-1"}, "model_changed"),
                     ({"tools": [TOOL, {**TOOL, "name": "write"}]}, "tools_changed"),
                     ({"system": SYSTEM + [{"type": "text", "text": "today"}]}, "system_changed"),
                     ({"messages": [{"role": "user", "content": "HELLO"}] + m2[1:]}, "messages_changed")):
        got = _reason(_create(beta, kw.pop("messages", m2), r2.id, **kw))
        assert got.type == kind
        assert got.cache_missed_input_tokens == _missed(before, kind)
    settings = _create(beta, m2, r2.id, tool_choice={"type": "any"})
    assert _reason(settings).type == "unavailable"
    assert _reason(_create(beta, m2, "msg_nobody_answered_this")).type == "previous_message_not_found"


def _missed(prev, kind):
    """What the named request had from the divergence on, by the emulator's own token rule."""
    tools, system, msgs = (sum(s.tokens) for s in (prev.tools, prev.system, prev.messages))
    return {"model_changed": tools + system + msgs, "tools_changed": system + msgs,  # (a tool appended)
            "system_changed": msgs, "messages_changed": msgs}[kind]  # (the first message changed)


def test_streaming_carries_it_on_message_start(beta, emu):
    m1 = [{"role": "user", "content": "stream me"}]
    r1 = _create(beta, m1, None)
    body = {"model": "claude-haiku-4-5", "max_tokens": 20, "system": SYSTEM, "tools": [TOOL], "messages": m1,
            "stream": True, "diagnostics": {"previous_message_id": r1.id}}
    status, _, raw = post(emu.url + "/v1/messages", body, {**KEY, "anthropic-beta": f"x-1,{BETA}"})
    assert status == 200
    events = parse_sse(raw)
    start = next(d for e, d in events if e == "message_start")
    assert start["message"]["diagnostics"]["cache_miss_reason"]["type"] == "model_changed"


def test_the_field_is_no_part_of_the_cache_key(beta, emu):
    m = [{"role": "user", "content": [{"type": "text", "text": "same prefix " * 300,
                                       "cache_control": {"type": "ephemeral"}}]}]
    plain = anthropic.Anthropic(base_url=emu.url, api_key="sk-ant-test", max_retries=0).messages
    first = plain.create(model="claude-sonnet-4-5", max_tokens=10, system=SYSTEM, messages=m)
    asked = beta.create(
        model="claude-sonnet-4-5", max_tokens=10, system=SYSTEM, messages=m, betas=[BETA],
        diagnostics={"previous_message_id": first.id})
    assert first.usage.cache_creation_input_tokens > 0
    assert asked.usage.cache_read_input_tokens == first.usage.cache_creation_input_tokens + (
        first.usage.cache_read_input_tokens)
    assert asked.usage.cache_creation_input_tokens == 0
    assert _reason(asked).type == "previous_message_not_found"  # the first asked without the beta: not kept


def test_refusals_in_the_apis_own_words(emu):
    body = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}],
            "diagnostics": {"previous_message_id": None}}
    emu.cache_diagnosis("beta")
    status, _, raw = post(emu.url + "/v1/messages", body, KEY)  # the field without the beta
    assert status == 400 and "diagnostics: Extra inputs are not permitted" in json.loads(raw)["error"]["message"]
    for bad_value, named in (([], "diagnostics:"), ({"previous_message_id": 3}, "diagnostics.previous_message_id"),
                             ({"other": 1}, "diagnostics.other")):
        status, _, raw = post(emu.url + "/v1/messages", {**body, "diagnostics": bad_value},
                              {**KEY, "anthropic-beta": BETA})
        assert status == 400 and named in json.loads(raw)["error"]["message"]
    emu.cache_diagnosis("unknown_beta")
    plain = {k: v for k, v in body.items() if k != "diagnostics"}
    status, _, raw = post(emu.url + "/v1/messages", plain, {**KEY, "anthropic-beta": f"a-1,{BETA}"})
    assert status == 400 and f"`{BETA}`" in json.loads(raw)["error"]["message"]
    emu.cache_diagnosis("unknown_field")
    status, _, raw = post(emu.url + "/v1/messages", body, {**KEY, "anthropic-beta": BETA})
    assert status == 400 and json.loads(raw)["error"]["message"].startswith("diagnostics:")
    # Real clients' requests are still accepted in every mode: no field, other betas.
    for mode in ("beta", "unknown_beta", "unknown_field"):
        emu.cache_diagnosis(mode)
        assert post(emu.url + "/v1/messages", plain, {**KEY, "anthropic-beta": "claude-code-20250219"})[0] == 200
    status, _, raw = post(emu.url + "/_emulator/diagnosis", {"mode": "nope"})
    assert status == 400 and "unknown_beta" in json.loads(raw)["error"]
    assert post(emu.url + "/_emulator/diagnosis", {"mode": "beta"})[0] == 200
    assert emu.emulator.diagnosis.mode == "beta"


def test_compare_follows_the_cache_views_of_a_block():
    base = {"model": "m", "system": "sys", "tools": [TOOL, {**TOOL, "name": "late", "defer_loading": True}],
            "messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": [{"type": "text",
                                                                                            "text": "b"}]}]}
    # A string is one text block, a marker is no part of it, a deferred tool is not in the prefix.
    same = {**base, "system": [{"type": "text", "text": "sys", "cache_control": {"type": "ephemeral"}}],
            "tools": [TOOL], "messages": [{"role": "user", "content": [{"type": "text", "text": "a"}]},
                                          base["messages"][1]]}
    assert compare(fingerprint(base), fingerprint(same)) is None
    shorter = {**base, "messages": base["messages"][:1]}
    assert compare(fingerprint(base), fingerprint(shorter))["cache_miss_reason"]["type"] == "messages_changed"
    role = {**base, "messages": [{"role": "assistant", "content": "a"}, base["messages"][1]]}
    assert compare(fingerprint(base), fingerprint(role))["cache_miss_reason"]["type"] == "messages_changed"
    d = Diagnosis(keep=2)
    for n in range(3):
        d.answer(d.check({"anthropic-beta": BETA}, base), base, {"id": f"msg_{n}"})
    got = {"id": "msg_x"}
    d.answer(d.check({"anthropic-beta": BETA}, {**base, "diagnostics": {"previous_message_id": "msg_0"}}), base, got)
    assert got["diagnostics"]["cache_miss_reason"]["type"] == "previous_message_not_found"  # kept two at most
    with pytest.raises(ValueError):
        Diagnosis("sometimes")
