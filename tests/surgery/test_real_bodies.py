"""Doom analysis and surgery on every captured real body: cuts validate, untouched bodies stay byte-identical."""

from __future__ import annotations

import re

from scalpel_desktop.store import db
from scalpel_desktop.store.spill import SpillStore
from scalpel_desktop.store.cutlog import CutLog
from scalpel_desktop.surgery.doom import find_doom_spans
from scalpel_desktop.surgery.surgeon import Surgeon
from scalpel_desktop.surgery.validate import validate_rewrite
from scalpel_desktop.wire import jsoncodec
from scalpel_desktop.wire.formats import view_for
from tests.support import corpus_dir
from tests.wire.test_view import corpus_bodies

REDACTED = re.compile(r"^t_[0-9a-f]{12}_(\d+)$")
AGGRESSIVE = {"keep_recent": 0, "min_cut_tokens": 1, "stale_min_tokens": 50, "stale_age_messages": 4, "failed_age_messages": 1}


def expand_redacted(obj, salt=[0]):
    """Give redacted texts (``t_<sha12>_<length>``) back their length, so sizes are realistic."""
    if isinstance(obj, dict):
        return {k: expand_redacted(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [expand_redacted(v) for v in obj]
    if isinstance(obj, str):
        m = REDACTED.match(obj)
        if m:
            n = int(m.group(1))
            return (obj + " ") * (n // (len(obj) + 1)) + obj[: n % (len(obj) + 1)]
    return obj


def test_surgery_on_every_captured_body():
    corpus_dir("wire")
    surgeon = Surgeon(SpillStore(), CutLog(db.connect()))
    total_cuts = 0
    kinds = set()
    for name, body in corpus_bodies():
        for doc in (body, expand_redacted(body)):
            raw = jsoncodec.dumps(doc)
            v = view_for("messages", jsoncodec.loads(raw))
            spans = find_doom_spans(v, AGGRESSIVE, 2)
            cuts = surgeon.cut(v, spans, "corpus", "")
            surgeon.discard()
            problems = validate_rewrite(jsoncodec.loads(raw), v.doc)
            assert problems == [], (name, problems[:3])
            if not cuts:
                assert v.serialize() == raw
            total_cuts += len(cuts)
            kinds |= {c.kind for c in cuts}
    assert total_cuts > 100
    assert {"superseded_read", "duplicate", "failed", "stale_large"} <= kinds


def test_defaults_on_the_longest_real_history():
    wire = corpus_dir("wire", "redacted-bodies", "harvested")
    f = next(wire.glob("harvested-append-after-change-*.jsonl"))
    body = expand_redacted(jsoncodec.loads(f.read_text().splitlines()[1])["body"])
    v = view_for("messages", body)
    spans = find_doom_spans(v, None, 2)
    assert spans  # 532 messages of real work hold dead output under the shipped defaults
    for s in spans:
        r = v.result(s.tool_use_id)
        assert r.name not in ("Agent", "AskUserQuestion") and not r.name.startswith("mcp__")
        assert s.unit_index < s.died_at_unit <= len(v.units) - 1
    ids = [r.id for r in v.tool_results]
    assert not {s.tool_use_id for s in spans} & set(ids[-3:])
