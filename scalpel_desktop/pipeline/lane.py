"""The first-sighting lane: a large body no stage would change goes out before any stage looks at it.

A first sighting is never cut on a guess (``surgery/first_sighting.py``): all
its request path can need is the re-application of logged cuts, a free cut
in its last message, a warm cut that costs less than the reads it saves at
once, or the tool filter's pin. When every stage that could
act on the request says, from the body's skeleton alone (``wire/skeleton.py``),
that it would leave it unchanged (``may_defer``), the chain hands back an
exchange that sends the original bytes and has done nothing else: no parse
on the request path. A known conversation the memo dropped may take the same
lane when the surgery stage's ``may_defer`` gives the very bytes its full
path would send (its logged cuts spliced back in: ``surgery/ghost.py``). Its completion, after the answer, runs every stage's
``on_request`` first (``replay_request``: the full parse, the key, the
surgery stage's analysis), with ``ex.forwarded`` set so that no stage acts
as if it could still change what was sent, then the usual ``on_response``.
A dropped conversation that went as its ghost said, when the memo cannot
hold it again, is recorded from its new messages instead: every stage's
``on_turn`` (``surgery/ghost_turn.py``; a stage without one, or one whose
``takes_turn`` says no, has the full replay run).

Who decides: every stage with a ``may_defer(request, skeleton)`` is asked
(``skeleton()`` reads it, once, when a stage needs it); a mutating stage
without one vetoes (it might change the body). A body under
``LANE_MIN_BYTES`` takes the usual path: its full parse is cheap, and the
tests that read the request path's own record of a first sighting use small
bodies.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Sequence

from scalpel_desktop.exchange import ApiRequest, Decision, Exchange
from scalpel_desktop.wire.jsoncodec import too_deep
from scalpel_desktop.wire.skeleton import Skeleton, read_skeleton

log = logging.getLogger("scalpel.pipeline")

# Below this a first sighting takes the usual path: a full parse of 256 KB of
# many small messages is about 2.5 ms, of large reads well under 1 ms.
LANE_MIN_BYTES = 256 * 1024


def deferred_exchange(stages: Sequence[Any], request: ApiRequest, min_bytes: int,
                      busy: Callable[[Any], bool] = lambda key: False,
                      still_busy: Callable[[Any], bool] | None = None) -> Exchange | None:
    """An exchange that forwards ``request`` as it came, its stages' work all after the answer;
    None when the request takes the usual path. ``busy(key)``: an earlier request of that
    conversation has not completed yet (the usual path waits for it, and then knows it).

    ``still_busy(key)`` (the chain's: it waits a few ms for that completion): when the
    conversation is still busy after it, the request does not wait for its own analysis. If every
    stage would send it as it came with what is known now (a first sighting's analysis pending:
    nothing of it is known, so nothing new is cut), it takes the lane: sent now, its analysis
    after its answer, behind the one it did not wait for (the completion pool keeps one
    conversation's order), so that analysis applies to the next request (issue 25 step 2). A
    stage whose no is only the cheaper path for a known body (``veto_for_speed``: parse-reuse) is
    not asked then. Otherwise the usual path, which waits.

    Stages are asked in order with the skeleton read only when one needs it: parse-reuse,
    first, says no to a conversation's next request (it repeats a remembered body) without it."""
    if request.endpoint != "messages" or len(request.body) < min_bytes:
        return None
    skeleton = _Lazy(request)
    body = request.body
    try:
        ahead = False  # the conversation's earlier completion is still running: no waiting for it
        if still_busy is not None and busy is not None:
            skel = skeleton()
            ahead = busy(_key(skel)) and still_busy(_key(skel))
        for stage in stages:
            if ahead and getattr(stage, "veto_for_speed", False):
                continue
            got = _agrees(stage, request, skeleton)
            if not got:
                return None
            if isinstance(got, bytes):
                body = got  # (only the surgery stage says what to send: a dropped conversation's cuts)
        skel = skeleton()
    except _Unreadable:
        return None
    if not ahead and busy(_key(skel)):
        return None
    ex = Exchange(request=request, key=skel.key, model=skel.model)
    ex.forwarded = True
    ex.turn = _claimed(stages, request)
    if body is request.body:
        ex.decision = Decision("unchanged", "sent as it came before its conversation's previous analysis ended; "
                               "analysed after the answer" if ahead else
                               "a first sighting: sent as it came, analysed after the answer")
    else:
        ex.new_body = body
        ex.decision = Decision()
        ex.decision.add("replayed", "a dropped conversation: its cuts re-applied, analysed after the answer")
    return ex


def _key(skel: Skeleton) -> tuple:
    return (skel.key.session_id, skel.key.agent_id)


def stopping_exchange(request: ApiRequest) -> Exchange:
    """What a request gets while the proxy stops (``Chain.hurry``): sent as it came, no stage run, its
    conversation and model read from the skeleton for its ledger row (a body it cannot read: none)."""
    ex = Exchange(request=request)
    ex.forwarded = True
    ex.decision = Decision("unchanged", "the proxy was stopping: sent as it came, not analysed")
    if request.endpoint == "messages":
        try:
            skel = read_skeleton(request.headers, request.body)
        except Exception:  # noqa: BLE001 - the row goes without them
            skel = None
        if skel is not None:
            ex.key, ex.model = skel.key, skel.model
    return ex


class _Unreadable(Exception):
    """The body has no skeleton (``read_skeleton`` said None, or no messages): the usual path."""


class _Lazy:
    """The request's skeleton, read the first time a stage asks for it."""

    def __init__(self, request: ApiRequest):
        self._request = request
        self._skel: Skeleton | None = None
        self._read = False

    def __call__(self) -> Skeleton:
        if not self._read:
            self._read = True
            self._skel = read_skeleton(self._request.headers, self._request.body)
        if self._skel is None or not len(self._skel):
            raise _Unreadable()
        return self._skel


def _agrees(stage: Any, request: ApiRequest, skeleton: Callable[[], Skeleton]) -> bool | bytes:
    """The stage's ``may_defer``: False, True, or the bytes to send instead of the request's."""
    ask = getattr(stage, "may_defer", None)
    if ask is None:
        return not getattr(stage, "mutates", True)
    try:
        got = ask(request, skeleton)
        return got if isinstance(got, bytes) and got else bool(got)
    except _Unreadable:
        raise
    except Exception as e:  # noqa: BLE001 - any doubt: the usual path
        if too_deep(e):  # a body nested deeper than the codec writes: the usual path says so, once a request
            return False
        log.exception("stage %s failed to say whether a first sighting can wait", getattr(stage, "name", stage))
        return False


def _claimed(stages: Sequence[Any], request: ApiRequest) -> Any:
    """What a stage found for this request when it let it through (``claim_turn``), or None."""
    for stage in stages:
        claim = getattr(stage, "claim_turn", None)
        if claim is not None:
            try:
                got = claim(request)
            except Exception:  # noqa: BLE001 - no turn: the full analysis after the answer
                log.exception("stage %s failed to hand over what it found", getattr(stage, "name", stage))
                return None
            if got is not None:
                return got
    return None


def _take_turn(stages: Sequence[Any], turn: Any) -> bool:
    """Every stage can take a turn, and none would rather analyse the request in full."""
    try:
        return all(callable(getattr(s, "on_turn", None)) for s in stages) and \
            all(getattr(s, "takes_turn", lambda t: True)(turn) for s in stages)
    except Exception:  # noqa: BLE001
        log.exception("a stage failed to say whether it takes a turn")
        return False


def replay_request(stages: Sequence[Any], ex: Exchange) -> None:
    """Every stage's ``on_request`` for an exchange already sent (after its answer); or, for a
    dropped conversation its ghost vouched for, every stage's ``on_turn`` when each has one and
    none would rather analyse it in full (``takes_turn``: ``surgery/ghost_turn.py``)."""
    turn, ex.turn = ex.turn, None
    ex.decision = Decision()  # what the stages decide, as on the usual path
    if turn is not None and _take_turn(stages, turn):
        ex.turn = turn
        step = "on_turn"
    else:
        ex.key = None  # the full document's key, not the skeleton's (they agree; the document is the record)
        step = "on_request"
    sent = ex.new_body
    for stage in stages:
        try:
            getattr(stage, step)(ex)
        except Exception:  # noqa: BLE001
            log.exception("stage %s failed on a first sighting's request, after its answer",
                          getattr(stage, "name", stage))
        if ex.new_body is not sent:
            # Nothing can change a body that went out already: a stage that tried is wrong.
            log.error("stage %s changed a first sighting that had been sent already; ignored",
                      getattr(stage, "name", stage))
            ex.new_body = sent
