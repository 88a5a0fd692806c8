"""pipeline/parse_reuse.py borrows the memo's parsed messages for a conversation it forgot: the
document still equals a full parse, the bytes sent are the same, and a request the memo holds is
no longer parsed in full on the request path (issue 12's evicted 1 MB regression)."""

from __future__ import annotations

import logging
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scalpel_desktop.exchange import ApiRequest
from scalpel_desktop.pipeline import parse_reuse
from scalpel_desktop.pipeline.parse_reuse import ParseReuse
from scalpel_desktop.surgery.testing import SessionBuilder, file_text
from scalpel_desktop.wire.jsoncodec import dumps, loads
from scalpel_desktop.wire.usage import Usage
from tests.surgery.test_ghost import HEADERS, _chain, _in_turn, _send, _sequences


def _borrowing(tmp_path, name: str, keeps: int = 0, policy: str = "death"):
    """The pipeline with a parse-reuse that keeps ``keeps`` bodies of its own and borrows the memo's."""
    chain, stage = _chain(tmp_path, name, False, policy)
    reuse = chain.stages[0]
    assert isinstance(reuse, ParseReuse)
    reuse.size, reuse.borrow = keeps, stage.memo.snapshots
    return chain, stage, reuse


@pytest.mark.parametrize("policy", ["death", "cold"])  # (cold: most requests take ``_fast``, the view carried on)
def test_real_conversations_taking_turns_are_parsed_from_the_memo_and_send_the_same_bytes(tmp_path, policy):
    """Two real conversations in turn; parse-reuse keeps ONE body, the memo both: every request of
    either after its first finds its body forgotten by parse-reuse and held by the memo."""
    pair = _sequences(2)
    plain, _ = _chain(tmp_path, "plain", False, policy)
    chain, stage, reuse = _borrowing(tmp_path, "borrow", keeps=1, policy=policy)
    requests = borrowed = 0
    for _, _, req, body in _in_turn(pair):
        before, held = reuse.reused, [s.raw for s in stage.memo.snapshots()]
        a = _send(plain, body, req.ts, req.ts_done, req.usage)
        b = _send(chain, body, req.ts, req.ts_done, req.usage)
        assert b.doc == loads(body) and dumps(b.doc) == body  # what a full parse gives, key order too
        assert b.body_to_send() == a.body_to_send() and b.decision.changes == a.decision.changes
        requests += 1
        borrowed += reuse.reused > before and any(raw is b.layout_base for raw in held)
    # the other conversation's body is all parse-reuse keeps: nearly every later request borrowed
    assert borrowed >= requests - 2 * 3, (borrowed, requests)


def _text_session(n: int) -> SessionBuilder:
    s = SessionBuilder(session_id="00000000-0000-4000-8000-0000000000b1")
    for i in range(n):
        s.text(f"answer {i}").user(f"question {i}")
    return s


def _request(chain, s: SessionBuilder, at: float):
    return _send(chain, dumps(s.body()), at, at + 1, Usage(cache_read=1000))


def test_a_message_a_later_request_changed_is_parsed_from_the_bytes_not_borrowed(tmp_path):
    """The memo's view is of the request analysed in full; the requests after it (``_fast``) carry it
    on (a cold policy's: a warm one analyses every request in full). Its last message held the cache
    marker, which the next request moved on: at that index the view holds a message the client no
    longer sends, though every later body repeats far beyond it."""
    chain, stage, reuse = _borrowing(tmp_path, "marker", policy="cold")
    s = _text_session(3)
    first = _request(chain, s, 1000.0)
    assert not first.decision.figures.get("reused_units")  # analysed in full: its view is the memo's
    key = (s.session_id, "")
    view_msgs = stage.memo.get(key).view.original_doc["messages"]
    last = len(view_msgs) - 1
    for at in (1010.0, 1020.0, 1030.0):
        s.text(f"more {at}").user(f"and more {at}")
        before = reuse.reused
        ex = _request(chain, s, at)
        assert ex.doc == loads(ex.request.body), at
        assert reuse.reused == before + 1 and ex.decision.figures.get("reused_units")  # borrowed; the memo's path
    snap = stage.memo.get(key)
    assert snap.view.original_doc["messages"] is view_msgs  # the view carried on since the full analysis
    # The check could fail: the view's last message is not the client's now.
    assert "cache_control" in dumps(view_msgs[last]).decode()
    assert view_msgs[last] != loads(ex.request.body)["messages"][last]
    assert snap.view_prefix == last < len(snap.layout.ends) - 1


def test_a_borrow_that_fails_is_a_full_parse(tmp_path, caplog):
    reuse = ParseReuse(min_bytes=0, size=0, borrow=lambda: 1 / 0)
    body = dumps(_text_session(4).body())
    with caplog.at_level(logging.ERROR, logger="scalpel.pipeline"):
        got = reuse.parse(body)
    assert got.doc == loads(body) and got.base is None and reuse.reused == 0
    assert "borrowing parsed messages failed" in caplog.text


def test_the_shipped_stages_borrow_from_the_surgery_stages_memo(tmp_path, monkeypatch):
    from scalpel_desktop.pipeline.assemble import close_stages, default_stages
    monkeypatch.setenv("SCALPEL_HOME", str(tmp_path / "home"))
    stages = default_stages({}, db_path=tmp_path / "db.sqlite", spill_dir=tmp_path / "spill")
    try:
        reuse = next(s for s in stages if isinstance(s, parse_reuse.ParseReuse))
        surgery = next(s for s in stages if s.name == "surgery")
        assert reuse.borrow == surgery.memo.snapshots
    finally:
        close_stages(stages)


def test_the_request_path_parse_is_incremental_for_a_borrowed_body(tmp_path, monkeypatch):
    """What the regression cost: the full parse of the whole body on the request path."""
    chain, _, reuse = _borrowing(tmp_path, "count")
    s = _text_session(30)
    _request(chain, s, 1000.0)
    s.text("next").user("go on")
    full = []
    monkeypatch.setattr(parse_reuse, "loads", lambda raw: full.append(len(raw)) or loads(raw))
    ex = chain.process(ApiRequest("POST", "/v1/messages", "", "anthropic", "messages", HEADERS,
                                  dumps(s.body()), 1010.0))
    assert ex.doc == loads(ex.request.body) and full == [] and reuse.reused == 1


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(["cold", "death"]),
       st.lists(st.tuples(st.integers(0, 3), st.integers(1, 4)), min_size=3, max_size=14))
def test_random_histories_borrowed_equal_a_full_parse_and_send_the_same_bytes(policy, ops):
    """Growing, going back, rewriting an earlier message, with tool calls: parse-reuse keeping
    nothing of its own borrows whatever the memo holds, and every document equals a full parse,
    every body sent equals that of a pipeline that parses every body in full."""
    tmp = Path(tempfile.mkdtemp(prefix="borrow-"))
    chain, _, reuse = _borrowing(tmp, "b", policy=policy)
    plain, _ = _chain(tmp, "p", False, policy)
    plain.stages[0].size = 0  # parses every body in full: the reference
    s = _text_session(2)
    at = 1000.0
    for n, (op, k) in enumerate(ops):
        if op == 0:
            s.text(f"answer {n}").user(f"question {n}")
        elif op == 1:
            path = f"/home/user/proj/f{k}.py"
            s.call("Read", {"file_path": path}, file_text(path, 40 * k, salt=str(n)))
        elif op == 2 and len(s.messages) > k + 2:  # the client went back k messages
            del s.messages[-k:]
            s.user(f"instead {n}")
        elif op == 3 and len(s.messages) > k + 2:  # an earlier message rewritten
            s.messages[k + 1] = {"role": "user", "content": [{"type": "text", "text": f"rewritten {n}"}]}
            s.user(f"after the rewrite {n}")
        at += 10.0
        a = _request(plain, s, at)
        b = _request(chain, s, at)
        assert b.doc == loads(b.request.body), (n, op, k)
        assert b.body_to_send() == a.body_to_send() and b.decision.changes == a.decision.changes
