"""Everything real Claude Code sent passes the emulator's validation, and the
stateless turn choice agrees with the capture emulator's own labels."""

from __future__ import annotations

import json

import pytest

from scalpel_desktop.accounting.cache_model import PromptCache, request_blocks
from scalpel_desktop.emulator.script import MARKER, conversation_shape, is_side_request
from scalpel_desktop.emulator.testing import running_emulator
from scalpel_desktop.wire.api_rules import validate_messages_body
from scalpel_desktop.wire.jsoncodec import dumps
from tests.emulator.helpers import post
from tests.support import corpus_dir

pytestmark = pytest.mark.corpus

FILES = [("claude-code-2.1.332", "requests.jsonl"), ("claude-code-2.0.77", "requests.jsonl"),
         ("claude-code-2.0.77", "requests-interactive.jsonl")]


def rows(version: str, name: str) -> list[dict]:
    path = corpus_dir("wire", version) / name
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.mark.parametrize("version,name", FILES)
def test_every_captured_body_validates_and_bills(version, name):
    cache = PromptCache()
    items = rows(version, name)
    assert items
    for i, row in enumerate(items):
        body = row["body"]
        validate_messages_body(body)
        usage = cache.bill(body["model"], request_blocks(body), float(i))
        assert usage.prompt_tokens == sum(b.tokens for b in request_blocks(body))


def test_captured_bodies_get_200_from_the_server():
    """Byte for byte, as Claude Code sent them, through the real HTTP path."""
    items = rows("claude-code-2.1.332", "requests.jsonl") + rows("claude-code-2.0.77", "requests.jsonl")
    with running_emulator() as emu:
        for row in items:
            headers = {k: v for k, v in row["headers"].items()
                       if k not in ("host", "content-length", "connection", "accept-encoding")}
            headers["x-api-key"] = "sk-test"
            body = dumps(row["body"])
            status, _, raw = post(emu.url + row["path"], body, headers)
            assert status == 200, raw[:300]
        assert [r.body for r in emu.received] == [dumps(row["body"]) for row in items]
        assert all(r.query == "beta=true" for r in emu.received)
        # Claude Code's own cache markers: every later turn of the 2.1.332 session reads the cache
        later = [r for r, row in zip(emu.received, items)
                 if row["headers"].get("user-agent", "").startswith("claude-cli/2.1.332")
                 and row["reply"].startswith("main:main:") and row["reply"] != "main:main:0"]
        assert len(later) >= 10
        assert all(r.usage.cache_read > 0 for r in later)


def test_turn_choice_matches_the_capture_labels():
    for version in ("claude-code-2.1.332", "claude-code-2.0.77"):
        for row in rows(version, "requests.jsonl"):
            body, label = row["body"], row["reply"]
            shape = conversation_shape(body)
            if label == "side":
                assert is_side_request(body, shape), (version, row["idx"])
                continue
            _, track, index = label.split(":")
            assert shape.turns_since_anchor == int(index), (version, row["run"], row["idx"])
            marker = MARKER.search(shape.anchor_text)
            if track in ("plain", "resume"):
                assert marker and marker.group(1) == track
            elif not marker:
                assert not is_side_request(body, shape), (version, row["idx"])


def test_redacted_long_histories_validate():
    """Real 529-message histories (texts redacted; tools stripped to names, so completed here)."""
    files = sorted(corpus_dir("wire", "redacted-bodies", "harvested").glob("harvested-*.jsonl"))
    assert files
    for path in files:
        for line in path.read_text(encoding="utf-8").splitlines():
            body = dict(json.loads(line)["body"], max_tokens=1000)
            body["tools"] = [dict(t, input_schema={"type": "object"}) for t in body.get("tools") or []]
            validate_messages_body(body)
            assert sum(1 for b in request_blocks(body) if b.breakpoint) <= 4


def _bodies(node, where: str):
    """Every request body (a dict with a non-empty ``messages`` list of role-bearing messages) in a JSON tree,
    including bodies kept as JSON text inside strings (the proxy records of the redacted set)."""
    if isinstance(node, dict):
        msgs = node.get("messages")
        if isinstance(msgs, list) and msgs and all(isinstance(m, dict) and "role" in m for m in msgs):
            yield where, node
            return
        for k, v in node.items():
            yield from _bodies(v, f"{where}.{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _bodies(v, f"{where}[{i}]")
    elif isinstance(node, str) and node[:1] in "{[" and '"messages"' in node:
        try:
            yield from _bodies(json.loads(node), where + "(json)")
        except ValueError:
            return


def test_every_body_anywhere_in_the_wire_corpus_validates():
    """Each request body under ../shared/corpus/wire (captures, redacted bodies, proxy records): the redacted
    ones lack model, max_tokens and tool schemas, which are filled in; nothing else is changed."""
    root = corpus_dir("wire")
    found, refused = 0, []
    for path in sorted(p for p in root.rglob("*") if p.suffix in (".json", ".jsonl")):
        text = path.read_text(encoding="utf-8")
        docs = [json.loads(line) for line in text.splitlines() if line.strip()] if path.suffix == ".jsonl" else [json.loads(text)]
        for doc in docs:
            for where, body in _bodies(doc, path.name):
                body = dict(body)
                body.setdefault("model", "claude-opus-5-5")
                body.setdefault("max_tokens", 1000)
                if body.get("tools"):
                    body["tools"] = [t if "input_schema" in t or "type" in t else dict(t, input_schema={"type": "object"})
                                     for t in body["tools"]]
                found += 1
                try:
                    validate_messages_body(body)
                except Exception as e:  # noqa: BLE001 - collected and reported together
                    refused.append((str(path.relative_to(root)), where, str(e)[:200]))
    assert found >= 150  # 18 + 54 captured, 90 redacted at the time of writing
    assert not refused, refused[:10]
