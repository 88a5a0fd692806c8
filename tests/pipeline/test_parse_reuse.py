"""ParseReuse builds exactly ``loads(raw)`` while parsing only what is new."""

from __future__ import annotations

import random

from scalpel_desktop.pipeline.parse_reuse import ParseReuse
from scalpel_desktop.pipeline.seam import ApiRequest, Exchange
from scalpel_desktop.wire.jsoncodec import dumps, loads

from tests.invariants.agent_sessions import generate


def _ex(raw: bytes) -> Exchange:
    return Exchange(ApiRequest("POST", "/v1/messages", "", "anthropic", "messages", {}, raw, 0.0))


def test_documents_equal_a_full_parse_across_interleaved_conversations():
    stage = ParseReuse(min_bytes=0)
    a = generate(random.Random(1)).requests
    b = generate(random.Random(2)).requests
    reqs = [r for pair in zip(a, b) for r in pair]
    for r in reqs:
        raw = dumps(r.body)
        ex = _ex(raw)
        stage.on_request(ex)
        assert ex.doc == loads(raw)
        assert dumps(ex.doc) == raw  # key order too
    assert stage.reused > len(reqs) // 2


def test_a_changed_prefix_falls_back_to_a_full_parse():
    stage = ParseReuse(min_bytes=0)
    s = generate(random.Random(5)).requests
    first, second = dumps(s[3].body), s[4].body
    stage.on_request(_ex(first))
    second = dict(second)
    second["messages"] = [dict(second["messages"][0], content="rewritten")] + second["messages"][1:]
    raw = dumps(second)
    ex = _ex(raw)
    stage.on_request(ex)
    assert ex.doc == loads(raw) and stage.reused == 0


def test_small_and_broken_bodies_are_left_to_the_lazy_parse():
    stage = ParseReuse()
    ex = _ex(b'{"model":"m","messages":[]}')
    stage.on_request(ex)
    assert "layout" not in ex.notes and ex.doc == {"model": "m", "messages": []}
    ex = _ex(b"{not json" * 10_000)
    stage = ParseReuse(min_bytes=0)
    stage.on_request(ex)
    assert ex.doc is None
