"""The surgery stage: build it, feed it Claude Code shaped exchanges, assert."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from scalpel_desktop.accounting.prices import PriceTable
from scalpel_desktop.wire.usage import Usage
from scalpel_desktop.wire.api_rules import validate_messages_body
from scalpel_desktop.pipeline.chain import Chain
from scalpel_desktop.pipeline.identify import Identify
from scalpel_desktop.exchange import ApiRequest, ResponseResult
from scalpel_desktop.surgery.stage import SurgeryStage, build_surgery_stage
from scalpel_desktop.store.db import connect
from scalpel_desktop.store.spill import SpillStore
from scalpel_desktop.store.cutlog import CutLog
from scalpel_desktop.surgery.doom import is_stub
from scalpel_desktop.surgery.economist import Economist
from scalpel_desktop.surgery.surgeon import content_sha
from scalpel_desktop.surgery.testing import SessionBuilder, file_text
from scalpel_desktop.surgery.validate import validate_rewrite
from scalpel_desktop.wire.jsoncodec import dumps, loads
from scalpel_desktop.wire.formats import view_for

PRICES = PriceTable.builtin()
MODEL = "claude-opus-4-5"


class Harness:
    def __init__(self, root: Path, **config):
        self.root = root
        self.config = {"policy": "cold", "tier": 2, **config}
        self.conn = connect(root / "ledger.db")
        self.spill = SpillStore(root / "spill")
        self.restart()

    def restart(self):
        self.stage = SurgeryStage(self.config, self.spill, CutLog(self.conn), Economist(self.config, PRICES), PRICES)
        self.chain = Chain([Identify(), self.stage])

    def send(self, body: dict | bytes, at: float, usage: Usage | None = None, endpoint: str = "messages",
             status: int = 200):
        raw = body if isinstance(body, bytes) else dumps(body)
        req = ApiRequest("POST", "/v1/messages", "beta=true", "anthropic", endpoint,
                         {"anthropic-version": "2023-06-01", "content-type": "application/json"}, raw, at)
        ex = self.chain.process(req)
        self.chain.complete(ex, ResponseResult(status, usage or Usage(cache_read=1000), 100.0, 2000.0, at + 2))
        return ex


def session_with_superseded_read() -> tuple[SessionBuilder, str]:
    s = SessionBuilder()
    s.user("The project notes, for context: " + "note " * 4000)  # keeps the prompt cacheable after a cut
    big = s.call("Read", {"file_path": "/home/user/proj/a.py"}, file_text("/home/user/proj/a.py", 400))
    s.call("Edit", {"file_path": "/home/user/proj/a.py", "old_string": "x", "new_string": "y"}, "The file has been updated.")
    for i in range(4):
        s.call("Bash", {"command": f"echo {i}"}, f"out {i} " + "z" * 900)
    return s, big


@pytest.fixture
def h(tmp_path):
    return Harness(tmp_path)


def test_warm_conversation_is_never_cut(h):
    s, big = session_with_superseded_read()
    ex1 = h.send(s.body(MODEL), at=1000)
    assert ex1.decision.label == "unchanged" and "first-seen" in ex1.decision.reason
    s.text("ok")
    s.user("go on")
    ex2 = h.send(s.body(MODEL), at=1030)
    assert ex2.new_body is None and ex2.decision.label == "unchanged"
    assert ex2.decision.figures["break_reason"] == "append"


def test_cut_after_ttl_expiry_is_valid_recoverable_and_replayed(h):
    s, big = session_with_superseded_read()
    h.send(s.body(MODEL), at=1000)
    s.user("back after lunch")
    original = s.body(MODEL)
    ex = h.send(original, at=1000 + 2 + 300 + 31)
    assert ex.decision.label == "cut", ex.decision.reason
    assert "ttl-expired" in ex.decision.reason
    assert ex.decision.tokens_removed > 0 and ex.decision.figures["new_cuts"] == 1
    sent = loads(ex.new_body)
    assert validate_rewrite(original, sent) == []
    validate_messages_body(sent)
    v = view_for("messages", sent)
    stub = v.result(big).content
    assert is_stub(stub) and "superseded read" in stub
    # RECOVERABLE: the spill file holds exactly the original content.
    data, sha = content_sha(view_for("messages", original).result(big).content)
    assert (h.root / "spill" / sha[:2] / sha).read_bytes() == data
    assert oct(os.stat(h.root / "spill" / sha[:2] / sha).st_mode & 0o777) == "0o600"
    # Replayed on the next request, byte for byte.
    s.text("done")
    s.user("thanks")
    ex2 = h.send(s.body(MODEL), at=1000 + 400)
    assert ex2.new_body is not None
    assert view_for("messages", loads(ex2.new_body)).result(big).content == stub
    assert ex2.decision.figures["replayed"] == 1 and ex2.decision.figures["new_cuts"] == 0
    # ... and after a restart (new stage, new CutLog, same DB), whatever the key.
    h.restart()
    s.session_id = "another-session"
    ex3 = h.send(s.body(MODEL), at=1000 + 420)
    assert view_for("messages", loads(ex3.new_body)).result(big).content == stub


def test_off_policy_replays_but_never_cuts(h):
    s, big = session_with_superseded_read()
    h.send(s.body(MODEL), at=1000)
    s.user("later")
    h.config["policy"] = "off"
    ex = h.send(s.body(MODEL), at=10_000)
    assert ex.new_body is None and ex.decision.reason == "policy off"


def test_excluded_working_directory_passes_untouched(h):
    h.config["exclude_dirs"] = ["/home/user"]
    s, big = session_with_superseded_read()
    h.send(s.body(MODEL), at=1000)
    s.user("later")
    ex = h.send(s.body(MODEL), at=10_000)
    assert ex.new_body is None and ex.decision.reason == "working directory excluded"


def test_body_that_does_not_round_trip_is_forwarded_as_sent(h):
    import json

    s, big = session_with_superseded_read()
    h.send(s.body(MODEL), at=1000)
    s.user("later \u00e9")
    raw = json.dumps(s.body(MODEL)).encode()  # spaces and \\u escapes: not Claude Code's bytes
    ex = h.send(raw, at=10_000)
    assert ex.new_body is None and "round-trip" in ex.decision.reason


def test_spill_failure_means_no_cut(h, tmp_path):
    s, big = session_with_superseded_read()
    h.send(s.body(MODEL), at=1000)
    blocker = tmp_path / "blocked"
    blocker.write_text("a file where the spill dir should be")
    h.stage.surgeon.spill = SpillStore(blocker)
    s.user("later")
    ex = h.send(s.body(MODEL), at=10_000)
    assert ex.new_body is None
    assert CutLog(h.conn).count() == 0


def test_count_tokens_and_unknown_bodies_pass(h):
    s, _ = session_with_superseded_read()
    assert h.send(s.body(MODEL), at=1, endpoint="count_tokens").new_body is None
    assert h.send(b"not json", at=2).new_body is None
    assert h.send(dumps({"model": MODEL}), at=3).new_body is None


def _cut_then_price(h, usage_for):
    """A cut, then its answer with usage counts ``usage_for(prompt tokens)`` for a prompt of
    a quarter token per byte sent. Returns (bytes removed, tokens per byte, realized notes)."""
    s, big = session_with_superseded_read()
    h.send(s.body(MODEL), at=1000)
    s.user("later")
    raw = dumps(s.body(MODEL))
    ex = h.stage_ex = h.chain.process(ApiRequest("POST", "/v1/messages", "", "anthropic", "messages", {}, raw, 10_000))
    assert ex.decision.label == "cut"
    prompt = len(ex.new_body) // 4
    h.chain.complete(ex, ResponseResult(200, usage_for(prompt), 1.0, 1.0, 10_002))
    return len(raw) - len(ex.new_body), prompt / len(ex.new_body), [vars(r) for r in ex.realized]


def test_realized_saving_priced_at_the_rate_of_its_position(h):
    r = PRICES.rates(MODEL)
    # Everything written (cold): the cut tokens would have been written at 5m.
    removed, ratio, notes = _cut_then_price(h, lambda p: Usage(cache_write_5m=p - 10, input_tokens=10))
    tokens = round(removed * ratio)  # the bytes removed x this request's own tokens per byte (no calibration yet)
    assert removed > 0 and notes == [{
        "kind": "surgery", "tokens": tokens, "usd": pytest.approx(tokens * r.write_5m),
        "provenance": {"tier": "usage", "tokens": "own_request", "bytes": removed,
                       "tokens_per_byte": round(ratio, 6), "pairs": 0, "error_pct": None}}]


def test_realized_saving_in_the_read_part_is_priced_at_the_read_rate(tmp_path):
    h = Harness(tmp_path)
    r = PRICES.rates(MODEL)
    removed, ratio, notes = _cut_then_price(h, lambda p: Usage(cache_read=p - 10, input_tokens=10))
    assert notes[0]["usd"] == pytest.approx(round(removed * ratio) * r.cache_read)


def test_realized_saving_after_the_last_breakpoint_is_priced_as_input(tmp_path):
    h = Harness(tmp_path)
    r = PRICES.rates(MODEL)
    removed, ratio, notes = _cut_then_price(h, lambda p: Usage(input_tokens=p))
    assert notes[0]["usd"] == pytest.approx(round(removed * ratio) * r.input)


def test_build_surgery_stage(tmp_path):
    stage = build_surgery_stage({"policy": "cold"}, connect(tmp_path / "l.db"), tmp_path / "spill", PRICES)
    assert stage.name == "surgery" and stage.mutates is True
    assert stage.spill.dir == tmp_path / "spill"


def test_paused_chain_skips_the_stage(tmp_path):
    h = Harness(tmp_path)
    s, _ = session_with_superseded_read()
    h.send(s.body(MODEL), at=1000)
    s.user("later")
    chain = Chain([Identify(), h.stage], paused=lambda: True)
    ex = chain.process(ApiRequest("POST", "/v1/messages", "", "anthropic", "messages", {}, dumps(s.body(MODEL)), 10_000))
    assert ex.new_body is None and ex.decision.action == "paused"


@pytest.mark.parametrize("seed", [3, 8])
def test_the_reuse_fast_path_sends_exactly_what_the_full_analysis_sends(tmp_path, seed):
    import random

    from scalpel_desktop.surgery.memo import Memo
    from tests.invariants.agent_sessions import generate
    from tests.invariants.harness import COLD, Pipeline

    session = generate(random.Random(seed))
    fast = Pipeline(COLD, tmp_path / "fast")
    slow = Pipeline(COLD, tmp_path / "slow")
    slow.stage.memo = Memo(size=0)  # never reuse: every request fully analysed
    reused = 0
    for req in session.requests:
        a, b = fast.process(req), slow.process(req)
        sa = a.body_to_send().replace(str(tmp_path / "fast").encode(), b"ROOT")
        sb = b.body_to_send().replace(str(tmp_path / "slow").encode(), b"ROOT")
        assert sa == sb
        assert a.decision.label == b.decision.label
        assert a.decision.tokens_removed == b.decision.tokens_removed
        # One decision builder: the fast path words its decision as a full analysis does.
        assert a.decision.reason == b.decision.reason
        fast_figures = {k: v for k, v in a.decision.figures.items() if k != "reused_units"}
        assert fast_figures == b.decision.figures
        reused += "reused_units" in a.decision.figures
        for pipe, ex in ((fast, a), (slow, b)):
            pipe.complete(ex, req, Usage(cache_read=1000))
    assert reused > len(session.requests) // 2


class _DropOneTool:
    """A stand-in for the tool filter: rewrites ex.doc's tools and the body before surgery."""

    name = "fake_filter"
    mutates = True

    def on_request(self, ex):
        doc = ex.doc
        doc["tools"] = doc["tools"][1:]
        ex.new_body = dumps(doc)

    def on_response(self, ex):
        pass


def test_an_earlier_stages_rewrite_is_kept_warm_cold_and_on_refusal(tmp_path):
    h = Harness(tmp_path)
    h.chain = Chain([Identify(), _DropOneTool(), h.stage])
    s, big = session_with_superseded_read()
    first = h.send(s.body(MODEL), at=1000)
    assert len(loads(first.body_to_send())["tools"]) == len(s.body(MODEL)["tools"]) - 1
    s.user("more")
    warm = h.send(s.body(MODEL), at=1030)
    assert len(loads(warm.body_to_send())["tools"]) == len(s.body(MODEL)["tools"]) - 1
    s.user("after lunch")
    cold = h.send(s.body(MODEL), at=10_000)
    assert cold.decision.label == "cut", cold.decision.reason
    sent = loads(cold.body_to_send())
    assert len(sent["tools"]) == len(s.body(MODEL)["tools"]) - 1
    assert is_stub(view_for("messages", sent).result(big).content)


@pytest.mark.parametrize("seed", [3, 8, 21])
def test_sharing_the_previous_view_sends_exactly_what_a_fresh_analysis_sends(tmp_path, seed):
    """Parse-reuse hands the previous messages over as the same objects: the stage then shares
    the previous view (results' analysis, replayed stubs, validated units, their hashes).
    Every body, decision and figure must be what a stage that never reuses anything gives."""
    import random

    from scalpel_desktop.surgery.memo import Memo
    from scalpel_desktop.pipeline.parse_reuse import ParseReuse
    from tests.invariants.agent_sessions import generate
    from tests.invariants.harness import COLD, Pipeline

    session = generate(random.Random(seed))
    fast = Pipeline(COLD, tmp_path / "fast")
    fast.chain = Chain([ParseReuse(min_bytes=0), Identify(), fast.stage])
    slow = Pipeline(COLD, tmp_path / "slow")
    slow.stage.memo = Memo(size=0)
    shared = cuts = 0
    for req in session.requests:
        # Past the TTL every few requests, so cuts are made and then replayed.
        a, b = fast.process(req), slow.process(req)
        sa = a.body_to_send().replace(str(tmp_path / "fast").encode(), b"ROOT")
        sb = b.body_to_send().replace(str(tmp_path / "slow").encode(), b"ROOT")
        assert sa == sb
        assert (a.decision.label, a.decision.tokens_removed) == (b.decision.label, b.decision.tokens_removed)
        fast_figures = {k: v for k, v in a.decision.figures.items() if k != "reused_units"}
        assert (a.decision.reason, fast_figures) == (b.decision.reason, b.decision.figures)
        cuts += "cut" in a.decision.changes
        snap = fast.stage.memo.get((a.key.session_id, a.key.agent_id))
        shared += snap is not None and snap.view is not None and snap.view.reused_units > 0
        for pipe, ex in ((fast, a), (slow, b)):
            pipe.complete(ex, req, Usage(cache_read=1000))
    assert shared > 0 and cuts > 0, "no cut made or previous view shared: the test proves nothing"


def test_one_pass_stub_positions_equal_a_search_per_id():
    from scalpel_desktop.surgery.offsets import first_result_offsets as _first_result_ids

    body = (b'{"a":"\\"tool_use_id\\":\\"t1\\"","m":[{"tool_use_id":"t2","x":1},'
            b'{"tool_use_id":"t1"},{"tool_use_id":"t1"},{"tool_use_id":"t10"},{"tool_use_id":"tool_use_id":"t3"}]}')
    first = _first_result_ids(body)
    for tid in (b"t1", b"t2", b"t10", b"t3", b"tool_use_id", b"nope"):
        assert first.get(tid, -1) == body.find(b'"tool_use_id":"' + tid + b'"'), tid


def test_the_layout_round_trip_check_agrees_with_the_full_one():
    from scalpel_desktop.wire.layout import locate
    from scalpel_desktop.wire.layout import round_trips_by_layout as _round_trips
    from scalpel_desktop.wire.jsoncodec import round_trips

    s, _ = session_with_superseded_read()
    doc = s.body(MODEL)
    raw = dumps(doc)
    layout = locate(raw, doc, None)
    assert layout is not None
    calls = []

    def full(r, d):
        calls.append(1)
        return round_trips(r, d)

    assert _round_trips(raw, doc, layout, full) is True and not calls  # proven without the full pass
    spaced = raw.replace(b'"max_tokens":', b'"max_tokens": ')  # the shell differs: not the codec's bytes
    assert _round_trips(spaced, loads(spaced), locate(spaced, loads(spaced), None), full) is False
    escaped = raw.replace(b'"model":"' + MODEL.encode(), b'"model":"\\u0063' + MODEL.encode()[1:])
    d2 = loads(escaped)
    assert d2["model"] == MODEL
    assert _round_trips(escaped, d2, locate(escaped, d2, None), full) is round_trips(escaped, d2) is False
    assert _round_trips(raw, doc, None, full) is True and calls  # no layout: the full check
