"""pipeline/lane.py: a large first sighting no stage would change goes out before any stage looks,
and what its completion records is exactly what the usual path records on the request."""

from __future__ import annotations

import logging
import time

from scalpel_desktop.accounting.prices import PriceTable
from scalpel_desktop.exchange import ApiRequest, Exchange, ResponseResult
from scalpel_desktop.pipeline.chain import Chain
from scalpel_desktop.pipeline.identify import Identify
from scalpel_desktop.pipeline.lane import LANE_MIN_BYTES
from scalpel_desktop.pipeline.parse_reuse import ParseReuse
from scalpel_desktop.store.db import connect
from scalpel_desktop.surgery.stage import build_surgery_stage
from scalpel_desktop.surgery.testing import SessionBuilder, file_text, reread_session
from scalpel_desktop.tools.filter_stage import ToolFilterStage
from scalpel_desktop.tools import removals
from scalpel_desktop.tools.store import ToolStore
from scalpel_desktop.wire.jsoncodec import dumps
from scalpel_desktop.wire.usage import Usage

SID = "00000000-0000-4000-8000-0000000000a7"
HEADERS = {"anthropic-version": "2023-06-01", "x-claude-code-session-id": SID}


def _chain(tmp, name="l.db", lane=True, policy="death", filter_on=False, removed=()):
    db = tmp / name
    stage = build_surgery_stage({"policy": policy, "tier": 2, "write_wait_ms": 5000}, connect(db),
                                tmp / f"spill-{name}", PriceTable.builtin())
    store = ToolStore.open(db)
    for n in removed:
        removals.remove(store, n, source="cli", force=True)
    tool_filter = ToolFilterStage(store, lambda: filter_on, wait_s=lambda: 5.0)
    assert tool_filter.pins.worker.flush(30)  # the set of non-empty pins has been read
    chain = Chain([ParseReuse(min_bytes=0), Identify(), tool_filter, stage])
    chain.lane_min_bytes = 0 if lane else None
    return chain, stage


def _session(turns: int = 6) -> SessionBuilder:
    return reread_session(SID, turns)


def _request(body: bytes, at: float) -> ApiRequest:
    return ApiRequest("POST", "/v1/messages", "", "anthropic", "messages", HEADERS, body, at)


def _done(chain, ex: Exchange, at: float) -> Exchange:
    chain.complete(ex, ResponseResult(200, Usage(cache_read=1000), 1, 1, at + 1))
    return ex


def test_a_first_sighting_goes_out_unparsed_and_is_recorded_as_the_usual_path_records_it(tmp_path):
    body = dumps(_session().body())
    chain, stage = _chain(tmp_path)
    ex = chain.process(_request(body, 1000.0))
    assert ex.forwarded and not ex.parsed and ex.body_to_send() is body  # no parse on the request path
    assert ex.key.session_id == SID and stage.economist.conversations == {}
    _done(chain, ex, 1000.0)

    usual, ustage = _chain(tmp_path, "usual.db", lane=False)
    uex = _done(usual, usual.process(_request(body, 1000.0)), 1000.0)
    assert not uex.forwarded and uex.body_to_send() is body
    assert ex.decision == uex.decision and "first-seen" in ex.decision.reason
    assert ex.decision.figures["candidates"] > 0  # dead reads were there, and not cut on a guess
    (key,) = stage.economist.conversations
    assert stage.economist.conversations[key] == ustage.economist.conversations[key]
    assert stage.memo.get(key).sent_hashes == ustage.memo.get(key).sent_hashes
    assert (ex.key, ex.model, ex.tokens_before, ex.project) == (uex.key, uex.model, uex.tokens_before, uex.project)

    s = _session()
    s.call("Read", {"file_path": "/home/user/proj/next.py"}, file_text("n", 30))
    nxt = dumps(s.body())
    a = _done(chain, chain.process(_request(nxt, 1010.0)), 1010.0)
    b = _done(usual, usual.process(_request(nxt, 1010.0)), 1010.0)
    assert not a.forwarded  # known now: the usual path, re-using what the completion remembered
    assert a.decision == b.decision and chain.get("parse-reuse").reused == 1
    assert a.body_to_send() == b.body_to_send()


def test_logged_cuts_to_replay_take_the_usual_path(tmp_path):
    chain, _ = _chain(tmp_path, policy="cold")
    s = _session()
    _done(chain, chain.process(_request(dumps(s.body()), 1000.0)), 1000.0)
    s.call("Read", {"file_path": "/home/user/proj/x.py"}, file_text("x", 30))
    cut = _done(chain, chain.process(_request(dumps(s.body()), 6000.0)), 6000.0)  # past the TTL
    assert "cut" in cut.decision.changes

    restarted, _ = _chain(tmp_path, policy="cold")  # the same log, a new process
    s.call("Read", {"file_path": "/home/user/proj/y.py"}, file_text("y", 30))
    ex = restarted.process(_request(dumps(s.body()), 6010.0))
    assert not ex.forwarded and ex.decision.figures["replayed"] > 0


def test_a_last_message_that_may_hold_a_free_cut_takes_the_usual_path(tmp_path):
    s = _session(2)
    s.calls([("Read", {"file_path": f"/home/user/proj/p{i}.py"}, file_text(f"p{i}", 20), None) for i in range(5)])
    chain, _ = _chain(tmp_path)
    ex = chain.process(_request(dumps(s.body()), 1000.0))
    assert not ex.forwarded and ex.surgery is not None


def test_the_tool_filter_on_takes_the_usual_path_and_off_pins_the_session_empty(tmp_path):
    body = dumps(_session().body())
    chain, _ = _chain(tmp_path, filter_on=True, removed=["Grep"])
    assert not chain.process(_request(body, 1000.0)).forwarded

    off, _ = _chain(tmp_path, "off.db", filter_on=False, removed=["Grep"])
    ex = _done(off, off.process(_request(body, 1000.0)), 1000.0)
    assert ex.forwarded
    tool_filter = off.get("tool_filter")
    assert tool_filter.pins.worker.flush(30)
    stored = tool_filter.store.get_pin(SID)
    assert stored is not None and stored.names == frozenset()


def test_a_conversation_whose_analysis_is_still_running_does_not_wait_for_it(tmp_path):
    """Issue 25 step 2: its next request goes as it came by the lane after ``own_wait_s``, and is
    analysed after the pending one; one that may need a cut waits for it (the usual path)."""
    chain, stage = _chain(tmp_path)
    chain.order_wait_s = 5.0
    s = _session()
    first = chain.process(_request(dumps(s.body()), 1000.0))
    assert first.forwarded
    chain.answered(first)  # answered; its completion (the analysis) has not run
    s.call("Read", {"file_path": "/home/user/proj/z.py"}, file_text("z", 30))
    body2 = dumps(s.body())
    t0 = time.monotonic()
    second = chain.process(_request(body2, 1001.0))
    assert time.monotonic() - t0 < 1.0  # not the order wait
    assert second.forwarded and second.body_to_send() is body2
    assert "previous analysis" in second.decision.reason and stage.economist.conversations == {}
    chain.answered(second)
    _done(chain, first, 1000.0)
    _done(chain, second, 1001.0)  # (the completion pool runs them in this order)
    (key,) = stage.economist.conversations
    assert len(stage.memo.get(key).sent_hashes) == len(s.body()["messages"])  # the second one's record
    s.call("Read", {"file_path": "/home/user/proj/w.py"}, file_text("w", 30))
    third = _done(chain, chain.process(_request(dumps(s.body()), 1002.0)), 1002.0)
    assert not third.forwarded and chain.get("parse-reuse").reused >= 1  # known: the usual path

    busy, _ = _chain(tmp_path, "busy.db")
    busy.order_wait_s = 0.3
    s = _session()
    first = busy.process(_request(dumps(s.body()), 1000.0))
    busy.answered(first)
    s.calls([("Read", {"file_path": f"/home/user/proj/p{i}.py"}, file_text(f"p{i}", 20), None) for i in range(5)])
    t0 = time.monotonic()
    assert not busy.process(_request(dumps(s.body()), 1001.0)).forwarded  # a free cut may be there: it waits
    assert time.monotonic() - t0 >= 0.3 and busy.order_waits.snapshot()["timed_out"] == 1


def test_under_the_size_bound_and_when_paused_the_usual_path(tmp_path):
    body = dumps(_session().body())
    chain, _ = _chain(tmp_path)
    chain.lane_min_bytes = LANE_MIN_BYTES
    assert len(body) < LANE_MIN_BYTES and not chain.process(_request(body, 1000.0)).forwarded
    paused, _ = _chain(tmp_path, "p.db")
    assert not paused.process(_request(body, 1000.0), paused=True).forwarded


class _Changer:
    """A mutating stage that agrees to wait and then changes the body anyway."""

    name, mutates = "changer", True

    def may_defer(self, request, skeleton):
        return True

    def on_request(self, ex):
        ex.new_body = b"{}"

    def on_response(self, ex):
        pass


class _Silent:
    name, mutates = "silent", True  # mutating, and no may_defer: it might change anything

    def on_request(self, ex):
        pass

    def on_response(self, ex):
        pass


def test_no_stage_can_change_what_went_out_and_one_that_cannot_say_keeps_the_usual_path(tmp_path, caplog):
    body = dumps(_session().body())
    chain = Chain([ParseReuse(min_bytes=0), Identify(), _Changer()])
    chain.lane_min_bytes = 0
    ex = chain.process(_request(body, 1000.0))
    assert ex.forwarded
    with caplog.at_level(logging.ERROR, logger="scalpel.pipeline"):
        _done(chain, ex, 1000.0)
    assert ex.new_body is None and ex.body_to_send() is body
    assert "changed a first sighting that had been sent already" in caplog.text

    silent = Chain([ParseReuse(min_bytes=0), Identify(), _Silent()])
    silent.lane_min_bytes = 0
    assert not silent.process(_request(body, 1000.0)).forwarded


def test_whatever_the_history_a_first_sighting_with_dead_results_takes_the_lane(tmp_path):
    """A user whose conversations go on long (the warm policies have turns to earn on): a first
    sighting is still never cut on a guess (SPEC 5; tests/surgery/test_payback.py), so it takes
    the lane whatever it holds, with nothing to bound. A status file polled sixty times: the dead
    reads are found after the answer, and left for the requests whose cache state is known."""
    from scalpel_desktop.surgery.remaining import History

    polled = SessionBuilder(session_id=SID)
    for i in range(60):
        polled.call("Read", {"file_path": "/home/user/proj/status.txt"},
                    "".join(f"poll {i} step {j} ok; " for j in range(1000)))
    polled.user("and now?")
    chain, stage = _chain(tmp_path)
    stage.economist.history = History.of([400] * 20)
    body = dumps(polled.body(model="claude-opus-4-5"))
    ex = chain.process(_request(body, 1000.0))
    assert ex.forwarded and not ex.parsed and ex.body_to_send() is body
    _done(chain, ex, 1000.0)
    assert not ex.decision.changes and ex.decision.figures["candidates"] > 50
