"""proxy/routing.py: which upstream, which endpoint, an error body each SDK parses, no proxy for loopback."""

from __future__ import annotations

import json

from yarl import URL

from scalpel_desktop.proxy.routing import endpoint_of, env_proxy_for, error_body, split_route


def test_split_route():
    assert split_route("/v1/messages?beta=true") == ("anthropic", "/v1/messages?beta=true")
    assert split_route("/openai/v1/chat/completions") == ("openai", "/v1/chat/completions")
    assert split_route("/openai") == ("openai", "/")
    assert split_route("/openai?x=1") == ("openai", "/?x=1")
    assert split_route("/openaix/v1") == ("anthropic", "/openaix/v1")
    assert split_route("/v1/messages/count_tokens?beta=true") == ("anthropic", "/v1/messages/count_tokens?beta=true")


def test_endpoint_of():
    assert endpoint_of("anthropic", "/v1/messages") == "messages"
    assert endpoint_of("anthropic", "/v1/messages/count_tokens") == "count_tokens"
    assert endpoint_of("anthropic", "/v1/models") == "other"
    assert endpoint_of("openai", "/v1/chat/completions") == "chat"
    assert endpoint_of("openai", "/v1/responses") == "responses"
    assert endpoint_of("openai", "/v1/responses/resp_1/input_items") == "other"


def test_error_bodies_parse_as_each_api():
    a = json.loads(error_body("anthropic", "down"))
    assert a == {"type": "error", "error": {"type": "api_error", "message": "down"}}
    o = json.loads(error_body("openai", "down"))
    assert o["error"]["message"] == "down" and o["error"]["type"] == "api_error"


def test_loopback_never_goes_through_an_env_proxy(monkeypatch):
    monkeypatch.setenv("http_proxy", "http://proxy.invalid:3128")
    assert env_proxy_for(URL("http://127.0.0.1:9/v1/messages")) is None
    assert env_proxy_for(URL("http://localhost:9/v1/messages")) is None
