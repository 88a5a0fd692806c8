"""The cache-diagnosis beta's wire facts: reading an answer, adding the beta and the field byte for byte."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from scalpel_desktop.wire import cache_diagnosis as cd

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8)


def test_read_diagnosis_reads_every_documented_shape():
    assert cd.read_diagnosis(None) == cd.ProviderDiagnosis(cd.NO_DIVERGENCE)
    assert cd.read_diagnosis({"cache_miss_reason": None}) == cd.ProviderDiagnosis(cd.PENDING)
    assert cd.read_diagnosis({}) == cd.ProviderDiagnosis(cd.PENDING)
    got = cd.read_diagnosis({"cache_miss_reason": {"type": "tools_changed", "cache_missed_input_tokens": 812}})
    assert got == cd.ProviderDiagnosis("tools_changed", 812)
    assert cd.read_diagnosis({"cache_miss_reason": {"type": "previous_message_not_found"}}).missed_tokens is None
    # A reason added later is kept (bounded); nonsense is not a diagnosis.
    assert cd.read_diagnosis({"cache_miss_reason": {"type": "x" * 100}}).reason == "x" * cd.REASON_MAX
    for bad in ([], "model_changed", {"cache_miss_reason": {"type": ""}}, {"cache_miss_reason": "model_changed"}):
        assert cd.read_diagnosis(bad) is None
    for tokens in (-1, True, 1.5, "7"):
        assert cd.read_diagnosis({"cache_miss_reason": {"type": "messages_changed",
                                                        "cache_missed_input_tokens": tokens}}).missed_tokens is None


@settings(max_examples=150, deadline=None)
@given(JSON_VALUES)
def test_read_diagnosis_never_raises(value):
    got = cd.read_diagnosis(value)
    assert got is None or isinstance(got.reason, str)


def test_with_beta_joins_the_clients_betas_once_and_keeps_every_other_header():
    pairs = [("x-api-key", "k"), ("anthropic-beta", "a-1,b-2"), ("User-Agent", "u")]
    got = cd.with_beta(pairs)
    assert got == [("x-api-key", "k"), ("anthropic-beta", f"a-1,b-2,{cd.BETA}"), ("User-Agent", "u")]
    assert cd.with_beta(got) == got  # listed once
    assert cd.has_beta(dict(got)) and not cd.has_beta(dict(pairs))
    assert cd.with_beta([("a", "1")]) == [("a", "1"), ("anthropic-beta", cd.BETA)]
    assert cd.with_beta([("Anthropic-Beta", " ")]) == [("Anthropic-Beta", cd.BETA)]
    assert cd.with_beta([("anthropic-beta", "a,")]) == [("anthropic-beta", f"a,{cd.BETA}")]
    # Two anthropic-beta headers: the last one takes it, the first is left as it was.
    two = [("anthropic-beta", "a"), ("anthropic-beta", "b")]
    assert cd.with_beta(two) == [("anthropic-beta", "a"), ("anthropic-beta", f"b,{cd.BETA}")]


def test_with_field_appends_the_member_and_keeps_every_byte_before_it():
    body = b'{"model":"m","messages":[{"role":"user","content":"}"}]}\n'
    got = cd.with_field(body, "msg_1")
    assert got.startswith(body[:-2]) and got.endswith(b"}\n")
    assert json.loads(got) == {**json.loads(body), "diagnostics": {"previous_message_id": "msg_1"}}
    assert json.loads(cd.with_field(b"{}", None)) == {"diagnostics": {"previous_message_id": None}}
    assert json.loads(cd.with_field(b" { \n } ", None)) == {"diagnostics": {"previous_message_id": None}}
    for not_an_object in (b"", b"[1]", b'"x"', b"{", b"null"):
        assert cd.with_field(not_an_object, None) is None


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.text(max_size=8).filter(lambda k: k != "diagnostics"), JSON_VALUES, max_size=5),
       st.none() | st.text(max_size=20), st.sampled_from([b"", b" ", b"\n", b"\r\n "]))
def test_with_field_is_the_body_plus_one_member(doc, previous, trailing):
    body = json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode() + trailing
    got = cd.with_field(body, previous)
    assert json.loads(got) == {**doc, "diagnostics": {"previous_message_id": previous}}
    cut = body.rstrip()[:-1]
    assert got[:len(cut)] == cut  # the cached prefix and every offset in it unchanged
    assert cd.has_field(got) and not cd.has_field(body)


def test_has_field_sees_only_a_top_level_member():
    assert cd.has_field(b'{"diagnostics":{"previous_message_id":null}}')
    assert not cd.has_field(b'{"messages":[{"content":"\\"diagnostics\\": 1"}],"x":{"diagnostics":1}}')
    assert cd.has_field(b'{"diagnostics": broken')  # unreadable: left alone
    assert cd.has_field(b"", {"diagnostics": None}) and not cd.has_field(b'{"diagnostics":1}', {"model": "m"})


def test_names_feature_on_the_apis_refusals_only():
    assert cd.names_feature(b'{"type":"error","error":{"type":"invalid_request_error",'
                            b'"message":"diagnostics: Extra inputs are not permitted"}}')
    assert cd.names_feature(f"Unexpected value(s) `{cd.BETA}` for the `anthropic-beta` header".encode())
    assert not cd.names_feature(b'{"error":{"message":"messages.0.content: Field required"}}')


def test_claude_api_only():
    h = {"anthropic-version": "2023-06-01", "x-api-key": "k"}
    assert cd.claude_api("https://api.anthropic.com", h)
    assert cd.claude_api("http://127.0.0.1:8790", h)
    assert not cd.claude_api("https://bedrock-runtime.us-east-1.amazonaws.com", h)
    assert not cd.claude_api("https://us-east5-aiplatform.googleapis.com/v1", h)
    assert not cd.claude_api("https://my-vertex-gateway.example", h)
    assert not cd.claude_api("https://res.services.ai.azure.com/anthropic", h)  # Foundry
    assert cd.claude_api("https://gw.example/vertex", h)  # only the host says which platform
    assert not cd.claude_api("https://api.anthropic.com", {"x-api-key": "k"})  # no anthropic-version
    assert not cd.claude_api("https://gw.example", {**h, "authorization": "AWS4-HMAC-SHA256 Credential=x"})
    assert not cd.claude_api("https://gw.example", {**h, "x-goog-user-project": "p"})
    assert not cd.claude_api("not a url", h)
