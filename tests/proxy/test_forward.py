"""The seam: unchanged bodies go upstream as the client's bytes, changed ones as the stage made them."""

from __future__ import annotations

import json
import time

import httpx2

from scalpel_desktop.exchange import Exchange
from tests.proxy.conftest import SENTINEL_KEY

HEADERS = {"x-api-key": SENTINEL_KEY, "anthropic-version": "2023-06-01", "content-type": "application/json"}


class _Mutator:
    """A mutating stage: adds a field when asked by the request, else leaves the body alone."""

    name = "mutator"
    mutates = True

    def __init__(self):
        self.seen = 0

    def on_request(self, ex: Exchange) -> None:
        self.seen += 1
        doc = ex.doc
        if isinstance(doc, dict) and doc.get("metadata", {}).get("user_id") == "change-me":
            doc["metadata"]["user_id"] = "changed"
            ex.new_body = json.dumps(doc, separators=(",", ":")).encode()

    def on_response(self, ex: Exchange) -> None:
        pass


def test_unchanged_body_is_never_reserialized_and_changes_are_sent(proxy, emu):
    stage = _Mutator()
    proxy.runtime._pipeline.stages.insert(1, stage)
    # Whitespace and key order that no serializer here would reproduce.
    odd = b'{ "max_tokens" : 20,\n  "model":"claude-sonnet-4-6", "messages":[{"content":"h\\u00e9llo","role":"user"}] }'
    with httpx2.Client(timeout=30) as c:
        r = c.post(proxy.url + "/v1/messages?beta=true", content=odd, headers=HEADERS)
        assert r.status_code == 200
        assert emu.received[-1].body == odd and emu.received[-1].query == "beta=true"

        body = {"model": "claude-sonnet-4-6", "max_tokens": 20, "metadata": {"user_id": "change-me"},
                "messages": [{"role": "user", "content": "hi"}]}
        r = c.post(proxy.url + "/v1/messages", content=json.dumps(body).encode(), headers=HEADERS)
        assert r.status_code == 200
    assert stage.seen == 2
    assert emu.received[-1].json()["metadata"]["user_id"] == "changed"
    assert emu.received[-1].headers["content-length"] == str(len(emu.received[-1].body))


def test_paused_is_pure_pass_through(proxy, emu):
    stage = _Mutator()
    proxy.runtime._pipeline.stages.insert(1, stage)
    proxy.runtime.set_settings({"paused": True})
    body = json.dumps({"model": "claude-sonnet-4-6", "max_tokens": 20, "metadata": {"user_id": "change-me"},
                       "messages": [{"role": "user", "content": "hi"}]}).encode()
    with httpx2.Client(timeout=30) as c:
        assert c.post(proxy.url + "/v1/messages", content=body, headers=HEADERS).status_code == 200
    assert emu.received[-1].body == body and stage.seen == 0
    deadline = time.monotonic() + 5
    while proxy.runtime.status()["requests"] < 1 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert proxy.runtime.status()["state"] == "paused"
