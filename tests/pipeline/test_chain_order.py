"""Completions run after the answer; a conversation's next request still sees their state.

The proxy calls ``answered`` when the client has its answer and runs
``complete`` later, without holding the connection. A later request of the
same conversation waits (before the stages that keep per-conversation state)
until that completion has run; a request of another conversation does not.
"""

from __future__ import annotations

import threading

from scalpel_desktop.exchange import ApiRequest, ResponseResult
from scalpel_desktop.pipeline.chain import Chain
from scalpel_desktop.pipeline.identify import Identify

BOUND_S = 30.0  # joins are bounded so a broken ordering fails instead of hanging; nothing here is timed


def req(session: str, text: str = "hi") -> ApiRequest:
    body = ('{"model":"m","messages":[{"role":"user","content":"%s"}]}' % text).encode()
    return ApiRequest("POST", "/v1/messages", "", "anthropic", "messages",
                      {"x-claude-code-session-id": session}, body, 0.0)


class Stateful:
    """Per-conversation state written after the answer (a first sighting's analysis), read on the next request."""

    name, mutates = "stateful", False

    def __init__(self):
        self.gate = threading.Event()
        self.state: dict[str, int] = {}
        self.seen: list[tuple[str, str, int]] = []  # (event, session, state seen)
        self.lock = threading.Lock()

    def on_request(self, ex):
        sid = ex.key.session_id
        with self.lock:
            self.seen.append(("request", sid, self.state.get(sid, 0)))

    def on_response(self, ex):
        sid = ex.key.session_id
        if sid == "A":
            assert self.gate.wait(BOUND_S)
        with self.lock:
            self.state[sid] = self.state.get(sid, 0) + 1
            self.seen.append(("response", sid, self.state[sid]))


def _thread(fn, *args) -> threading.Thread:
    t = threading.Thread(target=fn, args=args, daemon=True)
    t.start()
    return t


def test_the_next_request_of_a_conversation_sees_the_completion_of_the_one_before():
    stage = Stateful()
    chain = Chain([Identify(), stage])
    first = chain.process(req("A"))
    chain.answered(first)
    completing = _thread(chain.complete, first, ResponseResult(200, None, 1.0, 2.0, 0.0))

    out: dict[str, object] = {}
    same = _thread(lambda: out.__setitem__("A", chain.process(req("A", "again"))))
    other = _thread(lambda: out.__setitem__("B", chain.process(req("B"))))
    other.join(BOUND_S)
    assert "B" in out  # another conversation never waits for A's completion
    assert ("request", "A", 0) in stage.seen and ("request", "B", 0) in stage.seen
    assert not any(e == ("request", "A", 1) for e in stage.seen)  # A's next request has not run its stages

    stage.gate.set()
    completing.join(BOUND_S)
    same.join(BOUND_S)
    assert "A" in out
    # ... and when it did, it saw the state A's completion left
    assert stage.seen.index(("response", "A", 1)) < stage.seen.index(("request", "A", 1))
    assert chain._pending == {}
    waits = chain.order_waits.snapshot()  # what the runtime's status reads
    assert (waits["waited"], waits["timed_out"]) == (1, 0)  # A's next waited; B never did


def test_a_request_without_a_pending_completion_never_waits():
    stage = Stateful()
    stage.gate.set()
    chain = Chain([Identify(), stage])
    ex = chain.process(req("A"))
    chain.complete(ex, ResponseResult(200, None, 1.0, 2.0, 0.0))  # completed without ``answered``: nothing pending
    chain.process(req("A", "again"))
    assert [e[0] for e in stage.seen] == ["request", "response", "request"]
    assert chain.order_waits.snapshot()["waited"] == 0


def test_a_completion_that_never_ends_delays_its_conversation_only_for_the_bound():
    stage = Stateful()
    chain = Chain([Identify(), stage])
    chain.order_wait_s = 0.05
    first = chain.process(req("A"))
    chain.answered(first)  # its completion never runs
    ex = chain.process(req("A", "again"))  # goes on after the bound (and logs it, and counts it)
    assert ex.key.session_id == "A" and stage.seen[-1] == ("request", "A", 0)
    waits = chain.order_waits.snapshot()
    assert (waits["waited"], waits["timed_out"]) == (1, 1) and waits["last_timeout_at"] is not None
    assert waits["longest_s"] >= chain.order_wait_s


def test_a_body_that_is_not_json_is_not_ordered():
    chain = Chain([Identify()])
    ex = chain.process(ApiRequest("POST", "/v1/messages", "", "anthropic", "messages", {}, b"\xff", 0.0))
    chain.answered(ex)
    assert ex.pending_completion is None and chain._pending == {}
