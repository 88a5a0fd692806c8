"""A first sighting goes out as it came and is analysed after its response - unless it needs a change.

A conversation the economist has never seen is never cut on a guess; what it
can need is the re-application of logged cuts (a resume after a restart) or
a cut inside its last message. Without either, the stage forwards it at once
and records after the response exactly what the full path would have.
"""

from __future__ import annotations

import pytest

from scalpel_desktop.accounting.prices import PriceTable
from scalpel_desktop.exchange import ApiRequest, Exchange, ResponseResult
from scalpel_desktop.pipeline.chain import Chain
from scalpel_desktop.pipeline.identify import Identify
from scalpel_desktop.pipeline.parse_reuse import ParseReuse
from scalpel_desktop.store.db import connect
from scalpel_desktop.surgery.doom import is_stub
from scalpel_desktop.surgery.remaining import History
from scalpel_desktop.surgery.stage import build_surgery_stage
from scalpel_desktop.surgery.testing import SessionBuilder, file_text, reread_session
from scalpel_desktop.wire.formats import view_for
from scalpel_desktop.wire.jsoncodec import dumps, loads
from scalpel_desktop.wire.usage import Usage

SID = "00000000-0000-4000-8000-0000000000f1"
HEADERS = {"anthropic-version": "2023-06-01", "x-claude-code-session-id": SID}


def _chain(tmp, name="l.db", defer=True, policy="cold", history=None):
    stage = build_surgery_stage({"policy": policy, "tier": 2, "write_wait_ms": 5000}, connect(tmp / name),
                                tmp / "spill", PriceTable.builtin())
    stage.defer_first_sightings = defer
    if history is not None:
        stage.economist.history = history
    return Chain([ParseReuse(min_bytes=0), Identify(), stage]), stage


def _session(turns: int = 6) -> SessionBuilder:
    return reread_session(SID, turns)


def _send(chain, body: bytes, at: float, done: bool = True) -> Exchange:
    ex = chain.process(ApiRequest("POST", "/v1/messages", "", "anthropic", "messages", HEADERS, body, at))
    if done:
        chain.complete(ex, ResponseResult(200, Usage(cache_read=1000), 1, 1, at + 1))
    return ex


def _stubs(body: bytes) -> set[str]:
    return {r.id for r in view_for("messages", loads(body)).tool_results if is_stub(r.content)}


def test_forwarded_at_once_and_recorded_after_as_the_full_path_would(tmp_path):
    body = dumps(_session().body())
    chain, stage = _chain(tmp_path)
    ex = _send(chain, body, 1000.0, done=False)
    assert ex.analyse_later and ex.surgery is None and ex.layout is None  # nothing analysed on the path
    assert ex.body_to_send() is body and stage.economist.conversations == {}
    chain.complete(ex, ResponseResult(200, Usage(cache_read=1000), 1, 1, 1001.0))

    full, fstage = _chain(tmp_path, "full.db", defer=False)
    fex = _send(full, body, 1000.0)
    assert fex.body_to_send() is body
    assert ex.decision == fex.decision and "first-seen" in ex.decision.reason
    (key,) = stage.economist.conversations
    assert stage.economist.conversations[key] == fstage.economist.conversations[key]
    assert stage.memo.get(key).sent_hashes == fstage.memo.get(key).sent_hashes
    assert stage.memo.get(key).layout == fstage.memo.get(key).layout

    s = _session()
    s.call("Read", {"file_path": "/home/user/proj/next.py"}, file_text("n", 30))
    nxt = dumps(s.body())
    a, b = _send(chain, nxt, 1010.0), _send(full, nxt, 1010.0)  # warm: the fast path from the memo
    assert a.decision == b.decision and a.decision.figures.get("reused_units", 0) > 0
    assert a.body_to_send() == b.body_to_send()


def test_a_first_sighting_with_logged_cuts_replays_them_on_the_request_path(tmp_path):
    chain, stage = _chain(tmp_path)
    s = _session()
    _send(chain, dumps(s.body()), 1000.0)
    s.call("Read", {"file_path": "/home/user/proj/x.py"}, file_text("x", 30))
    cut = _send(chain, dumps(s.body()), 6000.0)  # past the TTL: the superseded reads are cut
    assert "cut" in cut.decision.changes
    stubs = _stubs(cut.body_to_send())
    assert stubs

    assert stage.cutlog.flush()  # (the commit lands just after the cut is sent: as a process's stop waits for it)
    restarted, _ = _chain(tmp_path)  # the same log, a new process: this conversation is a first sighting
    s.call("Read", {"file_path": "/home/user/proj/y.py"}, file_text("y", 30))
    body = dumps(s.body())
    ex = _send(restarted, body, 6010.0, done=False)
    assert not ex.analyse_later and ex.decision.figures["replayed"] == len(stubs)
    assert _stubs(ex.body_to_send()) == stubs  # byte-identical replay of the earlier cuts


def test_a_last_message_with_more_results_than_protected_is_analysed_at_once(tmp_path):
    s = _session(2)
    s.calls([("Read", {"file_path": f"/home/user/proj/p{i}.py"}, file_text(f"p{i}", 20), None) for i in range(5)])
    chain, _ = _chain(tmp_path)
    ex = _send(chain, dumps(s.body()), 1000.0, done=False)
    assert not ex.analyse_later and ex.surgery is not None


def _assert_the_full_path_agrees(tmp_path, body, ex, stage, **chain_kw):
    """The full path (nothing deferred), on the request, under ``death``: the body goes out as it
    came, the dead results were there to find, and its decision and the economist's state for the
    conversation are exactly what ``ex``'s first sighting recorded."""
    full, fstage = _chain(tmp_path, "full.db", defer=False, policy="death", **chain_kw)
    fex = _send(full, body, 1000.0)
    assert fex.body_to_send() is body
    assert fex.decision.figures["candidates"] > 0  # dead reads were there to find
    assert ex.decision == fex.decision
    (key,) = stage.economist.conversations
    assert stage.economist.conversations[key] == fstage.economist.conversations[key]


@pytest.mark.parametrize("history", [None, History.of([200] * 10), History.of([3] * 10)],
                         ids=["no turns to earn on", "long conversations", "short conversations"])
def test_under_death_a_first_sighting_goes_out_at_once_and_the_full_path_agrees(tmp_path, history):
    """A warm policy never cuts a conversation it has never seen (SPEC 5: no cut on a guess), with
    or without turns to earn on: a fresh install's prior, a ledger saying conversations go on for
    long (the worst case would repay here: most of this small prompt is superseded reads), or one
    saying they are short. Each time the body goes out as it came, is analysed after the answer,
    and the full path, run on the request, agrees to the byte and the figure."""
    body = dumps(_session().body())
    chain, stage = _chain(tmp_path, policy="death", history=history)
    ex = _send(chain, body, 1000.0, done=False)
    assert ex.analyse_later and ex.surgery is None and ex.body_to_send() is body
    chain.complete(ex, ResponseResult(200, Usage(cache_read=1000), 1, 1, 1001.0))
    _assert_the_full_path_agrees(tmp_path, body, ex, stage, history=history)


def test_another_conversation_s_request_does_not_wait_for_an_analysis_s_doom_scan(tmp_path):
    """Issue 25: the analysis after the answer holds the stage's lock around the shared state only;
    the doom scan of its own document runs outside it, and between its phases it lets requests go
    first (``Exchange.yield_to_requests``, the completion pool's gate)."""
    import threading
    import time

    chain, stage = _chain(tmp_path, policy="death")
    scanning, release = threading.Event(), threading.Event()
    real = stage.find_spans

    def slow_scan(view, config, tier):
        scanning.set()
        assert release.wait(10)
        return real(view, config, tier=tier)

    stage.find_spans = slow_scan
    first = _send(chain, dumps(_session().body()), 1000.0, done=False)
    assert first.analyse_later
    yielded = []
    chain.yield_to_requests = lambda: yielded.append(1)
    worker = threading.Thread(target=lambda: chain.complete(first, ResponseResult(200, Usage(cache_read=1000), 1, 1, 1001.0)))
    worker.start()
    assert scanning.wait(10)
    other = SessionBuilder(session_id="00000000-0000-4000-8000-0000000000f2")
    other.call("Read", {"file_path": "/home/user/proj/o.py"}, file_text("o", 30))
    stage.find_spans = real
    t0 = time.monotonic()
    ex = chain.process(ApiRequest("POST", "/v1/messages", "", "anthropic", "messages",
                                  {**HEADERS, "x-claude-code-session-id": other.session_id}, dumps(other.body()), 1000.5))
    assert time.monotonic() - t0 < 5 and ex.key.session_id == other.session_id  # it did not wait for the scan
    release.set()
    worker.join(10)
    assert first.surgery is not None and first.decision.figures["candidates"] > 0  # the analysis was recorded
    assert len(yielded) >= 3  # between the chain's stages and the analysis's phases
