"""``bench/misses.py``: the cache misses in transcripts' real usage, and their causes.

Two kinds of evidence: a small transcript built here whose every figure is
worked out by hand from the usage written into it, and a real transcript of
the shared corpus whose misses are checked against the provider's own counts,
read from the raw file with ``json`` (not through the project's reader).
"""

from __future__ import annotations

import json

import pytest

from scalpel_desktop.accounting.prices import PriceTable
from scalpel_desktop.bench.misses import sequence_misses
from scalpel_desktop.bench.reader import read_file
from tests.bench.transcripts import Transcript, text, tool_use, usage
from tests.support import corpus_dir

SONNET = "claude-sonnet-4-5-20250929"  # 3 $/MTok in, read 0.1x, 5-minute write 1.25x; minimum cacheable 1,024
HAIKU = "claude-haiku-4-5-20251001"
DEARER = (3.75 - 0.30) * 1e-6  # a 5-minute write over a read, per token
PRICES = PriceTable.builtin()


def the_misses(path):
    (seq,) = read_file(path).sequences
    return seq, sequence_misses(seq, PRICES, 30.0)


def session(path):
    tr = Transcript(model=SONNET)
    tr.user("Please fix a.py")
    tr.response([text("Reading."), tool_use("toolu_0")], usage(w5=20_000))  # 20,000 cached
    tr.result("toolu_0", "x = 1")
    tr.response([tool_use("toolu_1")], usage(read=20_000, w5=1_000))  # read all: 21,000 cached
    tr.result("toolu_1", "y = 2", dt=400.0)  # 400 s after the answer ended: past the 5-minute TTL
    tr.response([tool_use("toolu_2")], usage(w5=21_500))  # re-writes the 21,000
    tr.result("toolu_2", "z = 3", dt=10.0)
    tr.response([tool_use("toolu_3")], usage(read=15_000, w5=7_000))  # 6,500 short, nothing shows why
    tr.result("toolu_3", "w = 4", dt=5.0)
    tr.response([tool_use("toolu_4")], usage(w5=30_000), model=HAIKU)  # first haiku request: nothing cached
    tr.result("toolu_4", "v = 5", dt=5.0)
    tr.response([tool_use("toolu_5")], usage(read=10_000, w5=20_000))  # 12,000 short of sonnet's 22,000
    tr.result("toolu_5", "u = 6", dt=5.0)
    tr.response([text("Done.")], usage(read=30_000 - 1_024, w5=2_000))  # 1,024 short: not more than the minimum
    tr.compact("The conversation so far: a.py was fixed.")
    tr.response([text("Continuing.")], usage(w5=5_000))  # 30,976 short; it wrote 5,000 of them again
    return tr.write(path)


def test_a_hand_checked_session_has_four_misses_each_with_its_cause(tmp_path):
    seq, got = the_misses(session(tmp_path / "s.jsonl"))
    assert [(m.cause, m.tokens_rewritten, m.read_stopped_at) for m in got] == [
        ("ttl-expired", 21_000, 0), ("unexplained", 6_500, 15_000), ("model-switch", 12_000, 10_000),
        ("client-rewrite", 5_000, 0)]
    assert [m.request for m in got] == [seq.requests[k].request_id for k in (2, 3, 5, 7)]
    assert all(m.model == SONNET and m.conversation == seq.name for m in got)
    for m in got:
        assert m.cost_usd == pytest.approx(m.tokens_rewritten * DEARER)
    ttl, unexplained, switch, rewrite = (m.detail for m in got)
    assert ttl == {"gap_s": 400.0, "ttl": "5m", "past_ttl_s": 100.0, "within_margin": False}
    assert unexplained == {"gap_s": 10.0, "ttl": "5m"}
    assert switch == {"gap_s": 12.0, "ttl": "5m", "from": HAIKU}  # 5 + 2 (haiku's answer) + 5 s
    assert rewrite["compaction"] is True and rewrite["message"] == 0
    assert rewrite["was"] == {"role": "user", "blocks": ["text"]} and rewrite["changed"] == ["content"]
    assert "fixed" not in json.dumps(rewrite) and "Please" not in json.dumps(rewrite)  # never content


def test_a_rewound_branch_is_a_client_rewrite_at_the_first_message_it_changed(tmp_path):
    tr = Transcript(model=SONNET)
    tr.user("start")
    first = tr.response([text("hi")], usage(w5=20_000))
    tr.user("next")
    tr.response([text("ok")], usage(read=20_000, w5=500))
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}}
    tr.user([text("edited"), image], parent=first[-1])  # the person went back and asked again
    tr.response([text("sure")], usage(read=8_000, w5=13_000))
    _, (miss,) = the_misses(tr.write(tmp_path / "r.jsonl"))
    assert (miss.cause, miss.tokens_rewritten) == ("client-rewrite", 12_500)  # 20,500 cached, 8,000 read
    assert miss.detail["message"] == 2 and miss.detail["compaction"] is False
    assert miss.detail["was"] == {"role": "user", "blocks": ["text"]}
    assert miss.detail["now"] == {"role": "user", "blocks": ["text", "image"]}
    assert miss.detail["changed"] == ["block types"]


def test_one_hour_entries_are_priced_at_the_one_hour_write(tmp_path):
    tr = Transcript(model=SONNET)
    tr.user("start")
    tr.response([tool_use("toolu_0")], usage(w1=20_000))
    tr.result("toolu_0", "x", dt=600.0)  # past 5 minutes, within the hour
    tr.response([text("ok")], usage(read=5_000, w1=16_000))
    _, (miss,) = the_misses(tr.write(tmp_path / "h.jsonl"))
    assert (miss.cause, miss.detail["ttl"], miss.tokens_rewritten) == ("unexplained", "1h", 15_000)
    assert miss.cost_usd == pytest.approx(15_000 * (6.0 - 0.3) * 1e-6)


# ---------------------------------------------------------------- against the provider's counts

REAL = ("transcripts", "claude-code-log", "-Users-dain-workspace-claude-code-log-sample", "0d3a8e6f-290f-4105-a327-a2496e5e2a83.jsonl")


def raw_requests(path) -> list[tuple[str, str, dict]]:
    """(requestId, model, usage) of every billed response, in file order, straight from the JSON lines."""
    seen: dict[str, tuple[str, dict]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        rec = json.loads(line) if line.strip() else {}
        msg = rec.get("message")
        if rec.get("type") != "assistant" or not isinstance(msg, dict) or msg.get("model") == "<synthetic>":
            continue
        assert not rec.get("isSidechain")  # one conversation in this file
        seen.setdefault(rec.get("requestId") or msg["id"], (msg["model"], msg["usage"]))
    return [(rid, model, use) for rid, (model, use) in seen.items()]


def test_a_real_transcripts_misses_are_what_the_providers_counts_say():
    path = corpus_dir(*REAL)
    reqs = raw_requests(path)
    expected = {}
    for (_, model, prev), (rid, cur_model, cur) in zip(reqs, reqs[1:]):
        assert model == cur_model == "claude-sonnet-4-20250514"  # minimum cacheable: 1,024 (provider docs)
        short = prev["cache_read_input_tokens"] + prev["cache_creation_input_tokens"] - cur["cache_read_input_tokens"]
        if short > 1_024:
            expected[rid] = min(short, cur["cache_creation_input_tokens"])
    _, got = the_misses(path)
    assert {m.request: m.tokens_rewritten for m in got} == expected
    assert [(m.tokens_rewritten, m.cause) for m in got] == [(12_951, "unexplained"), (31_385, "ttl-expired"),
                                                             (4_906, "unexplained")]
    creation = {rid: use["cache_creation_input_tokens"] for rid, _, use in reqs}
    assert all(m.tokens_rewritten <= creation[m.request] for m in got)
    assert got[1].detail["gap_s"] == 326.5 and got[1].detail["within_margin"] is True  # 26.5 s past 5 minutes
