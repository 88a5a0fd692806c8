"""wire/skeleton.py: the key, the model and the message spans agree with the full parse, or None."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from scalpel_desktop.wire.identity import conversation_key
from scalpel_desktop.wire.jsoncodec import dumps, loads
from scalpel_desktop.wire.skeleton import read_skeleton
from tests.support import corpus_dir


def _captured() -> list[tuple[dict, bytes]]:
    rows = []
    for rel in ("claude-code-2.1.332/requests.jsonl", "claude-code-2.0.77/requests.jsonl",
                "claude-code-2.0.77/requests-interactive.jsonl"):
        path = corpus_dir("wire", *rel.split("/"))
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                if isinstance(row.get("body"), dict) and isinstance(row["body"].get("messages"), list):
                    rows.append((row["headers"], dumps(row["body"])))
    return rows


def _agrees(headers: dict, raw: bytes) -> None:
    doc = loads(raw)
    skel = read_skeleton(headers, raw)
    assert skel is not None
    assert skel.key == conversation_key(headers, doc)
    assert skel.model == (doc["model"] if isinstance(doc.get("model"), str) else "")
    assert len(skel) == len(doc["messages"])
    for i, m in enumerate(doc["messages"]):
        assert skel.message(i) == m


def test_every_captured_claude_code_request_agrees_with_the_full_parse():
    rows = _captured()
    assert len(rows) >= 60
    sources = set()
    for headers, raw in rows:
        _agrees(headers, raw)
        sources.add(read_skeleton(headers, raw).key.source)
        # Without the session header, the key comes from the metadata, or the first user message.
        bare = {k: v for k, v in headers.items() if k != "x-claude-code-session-id"}
        _agrees(bare, raw)
    assert "metadata" in sources or "header" in sources


def test_each_span_is_the_message_s_own_bytes():
    headers, raw = max(_captured(), key=lambda r: len(r[1]))
    skel = read_skeleton(headers, raw)
    doc = loads(raw)
    assert [bytes(memoryview(s)) for s in skel.spans] == [dumps(m) for m in doc["messages"]]


def test_bodies_it_cannot_read_are_none():
    for raw in (b"", b"[]", b"5", b'{"model":"m"}', b'{"messages":5}', b'{"messages":[{"a":1},',
                b'{"messages":[],"model":"\xff"}', b'{"metadata":{"x":1e999},"messages":[]}', b"\x1f\x8b\x08"):
        assert read_skeleton({}, raw) is None, raw


_json = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8)
_message = st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant", "system", 7]),
                                  "content": _json})
_user_id = st.one_of(st.none(), st.text(max_size=10),
                     st.uuids().map(lambda u: json.dumps({"session_id": str(u)})),
                     st.uuids().map(lambda u: f"user_ab_account__session_{u}"))


@settings(max_examples=200, deadline=None)
@given(messages=st.lists(_message | _json, min_size=1, max_size=6), user_id=_user_id,
       pck=st.one_of(st.none(), st.text(max_size=6)), header=st.booleans(), agent=st.booleans(),
       spaced=st.booleans())
def test_any_body_agrees_with_the_full_parse(messages, user_id, pck, header, agent, spaced):
    doc: dict = {"model": "claude-sonnet-4-6", "messages": messages}
    if user_id is not None:
        doc["metadata"] = {"user_id": user_id}
    if pck is not None:
        doc["prompt_cache_key"] = pck
    headers = {}
    if header:
        headers["x-claude-code-session-id"] = "hdr"
    if agent:
        headers["X-Claude-Code-Agent-Id"] = "a1"
    raw = json.dumps(doc, indent=1 if spaced else None).encode()
    _agrees(headers, raw)
