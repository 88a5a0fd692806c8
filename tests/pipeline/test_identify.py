"""The observing stage: conversation key, model, the size estimates before and after."""

from __future__ import annotations

from scalpel_desktop.accounting.tokens import CHARS_PER_TOKEN_DEFAULT
from scalpel_desktop.exchange import ApiRequest, Exchange
from scalpel_desktop.pipeline.identify import Identify, estimate_tokens_bytes
from scalpel_desktop.wire.jsoncodec import dumps


def exchange(body: bytes, **headers: str) -> Exchange:
    return Exchange(ApiRequest("POST", "/v1/messages", "", "anthropic", "messages", headers, body, 0.0))


def test_key_and_model_from_the_body_and_headers():
    ex = exchange(dumps({"model": "claude-opus-4-5", "messages": [{"role": "user", "content": "hi"}]}),
                  **{"x-claude-code-session-id": "sess-1", "x-claude-code-agent-id": "agent-7"})
    Identify().on_request(ex)
    assert (ex.key.session_id, ex.key.agent_id, ex.key.source) == ("sess-1", "agent-7", "header")
    assert ex.model == "claude-opus-4-5"
    assert ex.tokens_before == estimate_tokens_bytes(len(ex.request.body))
    assert ex.new_body is None and not ex.changed  # it observes only


def test_a_body_that_is_not_json_gets_no_key_but_still_a_size():
    ex = exchange(b"x" * 1000)
    Identify().on_request(ex)
    assert ex.key is None and ex.model == ""
    assert ex.tokens_before == round(1000 / CHARS_PER_TOKEN_DEFAULT)


def test_a_model_that_is_not_a_string_is_no_model():
    ex = exchange(dumps({"model": 4, "messages": []}))
    Identify().on_request(ex)
    assert ex.model == "" and ex.key is not None


def test_after_is_the_new_bodys_size_when_a_stage_changed_it_else_the_original():
    ident = Identify()
    ex = exchange(b"y" * 4000)
    ident.on_request(ex)
    ident.on_response(ex)
    assert ex.tokens_after == ex.tokens_before
    ex = exchange(b"y" * 4000)
    ident.on_request(ex)
    ex.new_body = b"y" * 400
    ident.on_response(ex)
    assert ex.tokens_after == estimate_tokens_bytes(400) < ex.tokens_before


def test_a_figure_a_stage_already_set_is_kept():
    ex = exchange(b"{}")
    ex.tokens_after = 12345
    Identify().on_response(ex)
    assert ex.tokens_after == 12345


def test_the_estimate():
    assert estimate_tokens_bytes(0) == 0 and estimate_tokens_bytes(-5) == 0
    assert estimate_tokens_bytes(1) == 1  # never zero for a body with bytes
    assert estimate_tokens_bytes(10_000) == round(10_000 / CHARS_PER_TOKEN_DEFAULT)
