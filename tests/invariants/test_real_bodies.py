"""REAL BODIES: every captured Claude Code request goes through the pipeline in order.

On a warm cache nothing is cut - except where the client itself broke the
prefix (Claude Code 2.0.77 re-serializes parallel tool calls on ``--resume``):
a cut on the warm part must lie at or after the longest prefix the request
shares with any earlier request of its session and model, computed here from
the bodies alone. Then the clock moves past the TTL before the
last requests of each capture: cuts happen there (wherever the doom spans find
something dead) and every body stays valid - ``validate_rewrite`` and the
emulated API's own checks.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scalpel_desktop.wire.api_rules import validate_messages_body
from scalpel_desktop.exchange import ApiRequest, Exchange
from scalpel_desktop.surgery.doom import find_doom_spans
from scalpel_desktop.surgery.validate import validate_rewrite
from scalpel_desktop.wire.jsoncodec import dumps, loads
from scalpel_desktop.wire.formats import view_for

from tests.invariants.harness import Pipeline
from tests.support import corpus_dir

# Low thresholds so the small captured sessions have something to cut once cold.
CONFIG = {"policy": "cold", "tier": 2, "batch_min_tokens": 0, "min_cut_tokens": 1, "keep_recent": 1,
          "stale_age_messages": 4, "stale_min_tokens": 50}
MOVED = 2  # the last requests of each capture are sent after the TTL
JUMP = 2 * 3600.0


def captures() -> list[tuple[str, list[tuple[dict, dict]]]]:
    wire = corpus_dir("wire")
    out = []
    for f in sorted(wire.glob("*/requests*.jsonl")):
        reqs = []
        for line in f.read_text(encoding="utf-8").splitlines():
            r = json.loads(line)
            if isinstance(r.get("body"), dict) and str(r.get("path", "")).startswith("/v1/messages") \
                    and "count_tokens" not in r.get("path", ""):
                reqs.append((r.get("headers") or {}, r["body"]))
        out.append((f"{f.parent.name}/{f.name}", reqs))
    for f in sorted((wire / "redacted-bodies" / "harvested").glob("harvested-*.jsonl")):
        reqs = [(json.loads(l).get("headers") or {}, json.loads(l)["body"]) for l in f.read_text().splitlines()]
        out.append((f.name, reqs))
    return out


CAPTURES = captures() if (Path(__file__).resolve().parents[3] / "shared" / "corpus" / "wire").exists() else []


def _send(pipe: Pipeline, headers: dict, body: dict, at: float) -> Exchange:
    raw = dumps(body)
    api = ApiRequest("POST", "/v1/messages", "beta=true", "anthropic", "messages",
                     {k.lower(): v for k, v in headers.items()}, raw, at)
    ex = pipe.chain.process(api)
    from scalpel_desktop.wire.usage import Usage
    from scalpel_desktop.exchange import ResponseResult

    pipe.chain.complete(ex, ResponseResult(200, Usage(cache_read=1000), 1.0, 1.0, at + 3))
    return ex


def _check_valid(original: dict, ex: Exchange) -> None:
    sent = loads(ex.body_to_send())
    assert validate_rewrite(original, sent) == []
    try:
        validate_messages_body(original)
    except Exception:  # noqa: BLE001 - the client's own oddity: only ours is judged
        return
    validate_messages_body(sent)


def test_the_corpus_is_there():
    corpus_dir("wire")
    assert len(CAPTURES) >= 5 and sum(len(r) for _, r in CAPTURES) >= 50


@pytest.mark.parametrize("name,reqs", CAPTURES, ids=[n for n, _ in CAPTURES])
def test_real_bodies_warm_then_cold(name, reqs, tmp_path):
    pipe = Pipeline(CONFIG, tmp_path)
    t = 1_000_000.0
    cut_when_cold = 0
    dead_when_cold = 0
    earlier: list[tuple[str, list]] = []
    for i, (headers, body) in enumerate(reqs):
        cold = i >= len(reqs) - MOVED
        if i == len(reqs) - MOVED:
            t += JUMP
        ex = _send(pipe, headers, body, t)
        t += 20
        _check_valid(body, ex)
        view = view_for("messages", body)
        hashes = view.unit_hashes() if view is not None else []
        model = body.get("model", "")
        if not cold and "cut" in ex.decision.changes:
            shared = max((_common(h, hashes) for m, h in earlier if m == model), default=len(hashes))
            sent = view_for("messages", loads(ex.body_to_send()))
            for r in sent.tool_results:
                if r.content != view.result(r.id).content:
                    assert r.unit_index >= shared, f"{name} #{i}: cut at unit {r.unit_index} on a warm cache"
        earlier.append((model, hashes))
        if cold:
            cut_when_cold += "cut" in ex.decision.changes
            dead_when_cold += bool(view is not None and find_doom_spans(view, CONFIG))
    if dead_when_cold:
        assert cut_when_cold, f"{name}: dead output past the TTL, yet nothing cut"


def _common(a: list, b: list) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n
