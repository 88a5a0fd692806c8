"""Runs stages in order; an exception anywhere forwards the original bytes.

Like mitmproxy's ``safecall``: a stage that raises is logged and the chain goes
on, but any change already made to the body is dropped (fail-open), and the
decision says so.

Nothing outside looks inside a chain: ``get(name)`` finds a stage,
``observe_only()`` says whether no stage that could change a body would run
now, ``stages`` is read only by the composer's ``close_stages``.

Order per conversation, not per connection: the proxy calls ``answered(ex)``
the moment the client has its answer, then runs ``complete`` off the request
path (the analysis of a first sighting, the ledger row) without holding the
connection. A later request of the SAME conversation waits in ``process``,
before the stages that keep per-conversation state (everything after
parse-reuse and identify), until every completion answered before it has run
(``order_wait_s`` at most; past it, it goes on and says so in the log): it
sees the analysis's state exactly as if the completion had been awaited.
Other conversations never wait for it. ``order_waits`` counts the requests
that waited and those that gave up at the bound, so the runtime's status can
say so (a wait past the bound means a request went on without the analysis
of the one before: a degraded state, not only a log line).

A large first sighting that no stage would change skips all of that: it goes
out before any stage looks, and its completion runs their ``on_request`` too
(``pipeline/lane.py``). So does a large request whose conversation's
completion is still running after ``own_wait_s`` when every stage would send
it as it came with what is known (``_still_busy``): a request never waits
for its own conversation's analysis unless that analysis may change it.
Completions call ``yield_to_requests`` between stages (the completion pool's
gate: requests on their way go first), and a request that waits here is
``aside`` (the completion it waits for must not wait for it).

Stopping (``hurry``): a completion that has not started drops its analysis
and keeps its row (a first sighting sent as it came is recorded without
running the stages it skipped; one analysed after its answer is not), and so
does a request observed after its answer; ``record_unfinished`` then records,
from the stopping thread, every answered request whose completion has not
recorded it yet (an analysis still running is left to finish or be dropped:
its row is written now, and only once). ``add_stages`` puts stages into a
running chain (surgery and the tool filter, once the database can be used).
"""

from __future__ import annotations

import logging
import threading
import time
from contextlib import nullcontext
from typing import Any, Callable, ContextManager, Hashable, Sequence

from scalpel_desktop.exchange import ApiRequest, Decision, Exchange, ResponseResult, Stage
from scalpel_desktop.pipeline.lane import LANE_MIN_BYTES, deferred_exchange, replay_request, stopping_exchange
from scalpel_desktop.wire.identity import conversation_key
from scalpel_desktop.wire.jsoncodec import too_deep

log = logging.getLogger("scalpel.pipeline")

# Stages that only read the request (the parse, the key): they run before a request waits for its
# conversation's pending completions; every later stage sees the state those completions leave.
_BEFORE_ORDER = ("parse-reuse", "identify")
_RECORDS = ("record",)  # the stages that write an exchange's row (its ledger row): kept when stopping
ORDER_WAIT_S = 10.0
OWN_WAIT_S = 0.01  # a large request waits this long for its own conversation's analysis (lane.py)


class OrderWaits:
    """Requests that waited for their conversation's earlier completions, since the chain was built."""

    def __init__(self):
        self._lock = threading.Lock()
        self.waited = 0  # requests that found an earlier completion still running and waited for it
        self.longest_s = 0.0
        self.timed_out = 0  # of those, the ones that went on at ``order_wait_s`` without it
        self.last_timeout_at: float | None = None  # time.time() of the latest

    def record(self, waited_s: float, timed_out: bool) -> None:
        with self._lock:
            self.waited += 1
            self.longest_s = max(self.longest_s, waited_s)
            if timed_out:
                self.timed_out += 1
                self.last_timeout_at = time.time()

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            return {"waited": self.waited, "longest_s": round(self.longest_s, 3), "timed_out": self.timed_out,
                    "last_timeout_at": self.last_timeout_at}


class Chain:
    def __init__(self, stages: Sequence[Stage], paused: Callable[[], bool] = lambda: False):
        self.stages = list(stages)
        self.paused = paused
        self.order_wait_s = ORDER_WAIT_S
        self.own_wait_s = OWN_WAIT_S  # ... of a large body that would go as it came: then by the lane
        self.order_waits = OrderWaits()
        # A first sighting this large that no stage would change goes out before any stage looks
        # (``pipeline/lane.py``); None: never.
        self.lane_min_bytes: int | None = LANE_MIN_BYTES
        self._pending: dict[Hashable, list[threading.Event]] = {}  # conversation -> completions not run yet
        self._pending_lock = threading.Lock()
        self._hurry = False
        self._unrecorded: dict[int, Exchange] = {}  # answered, their row not recorded yet (id -> exchange)
        self._recorded_now: dict[int, Exchange] = {}  # ... recorded by ``record_unfinished`` (kept alive)
        # Around a request's wait for its conversation's completions: the runtime's completion pool
        # lets that completion start at once (``proxy/completer.RequestsFirst.aside``).
        self.aside: Callable[[], ContextManager[Any]] = nullcontext
        self.yield_to_requests: Callable[[], None] | None = None  # (between a completion's stages: the same pool)

    def get(self, name: str) -> Any:
        """The stage called ``name``, or None."""
        for stage in self.stages:
            if getattr(stage, "name", None) == name:
                return stage
        return None

    def add_stages(self, stages: Sequence[Stage], before: str = "record") -> None:
        """Put ``stages`` in, before the stage named ``before`` (at the end without one). A request
        already under way keeps the list it started with (and its completion meets them harmlessly:
        a stage that has no state of a request does nothing on its response)."""
        current = list(self.stages)
        at = next((i for i, s in enumerate(current) if getattr(s, "name", None) == before), len(current))
        self.stages = current[:at] + list(stages) + current[at:]

    def hurry(self) -> None:
        """The proxy is stopping: from now on completions keep their rows and drop their analyses."""
        self._hurry = True

    def record_unfinished(self) -> int:
        """Record now every answered exchange whose completion has not recorded it; how many."""
        with self._pending_lock:
            todo = list(self._unrecorded.values())
        n = 0
        for ex in todo:
            if self._take_row(ex, now=True):
                n += 1
                self._record(self.stages, ex)
        return n

    def observe_only(self) -> bool | None:
        """When no stage that could change a body would run (paused, or every stage
        observes), the pause switch as read now (``True``/``False``); else None."""
        try:
            if self.paused():
                return True
        except Exception:  # noqa: BLE001
            return None
        return None if any(getattr(s, "mutates", True) for s in self.stages) else False

    def process(self, request: ApiRequest, *, paused: bool | None = None) -> Exchange:
        """``paused``: the caller's own reading of the pause switch, taken when it
        decided how to forward the request (it must not change between that
        decision and this run); None reads it now."""
        if paused is None:
            paused = _safe_bool(self.paused)
        if self._hurry:  # stopping: what the row needs, from the skeleton; no stage runs
            return stopping_exchange(request)
        if not paused and self.lane_min_bytes is not None:
            lane = deferred_exchange(self.stages, request, self.lane_min_bytes, busy=self._busy,
                                     still_busy=self._still_busy if self._pending else None)
            if lane is not None:
                return lane
        ex = Exchange(request=request)
        ordered = False
        for stage in self.stages:
            if paused and getattr(stage, "mutates", True):
                continue
            if not ordered and getattr(stage, "name", None) not in _BEFORE_ORDER:
                ordered = True
                self._wait_for_earlier(ex)
            try:
                stage.on_request(ex)
            except Exception as e:  # noqa: BLE001 - fail open, always
                ex.new_body = None
                if too_deep(e):
                    # Not a body the pipeline understands: forwarded as sent, and the
                    # stages after this one see no JSON (they would fail the same way).
                    log.info("stage %s: the body nests deeper than the JSON codec writes; forwarded as sent", stage.name)
                    ex.set_doc(None)
                    ex.decision = Decision("unchanged", "body nests deeper than the JSON codec writes: forwarded as sent")
                    continue
                log.exception("stage %s failed on request; forwarding the original bytes", stage.name)
                ex.decision = Decision("error", f"{stage.name}: {type(e).__name__}: {e}"[:300])
        if paused and not ex.decision.changes and ex.decision.action == "unchanged":
            ex.decision = Decision("paused", "paused: pass-through")
        return ex

    def answered(self, ex: Exchange) -> None:
        """The client has ``ex``'s answer and ``complete(ex, ...)`` will run later: until it has,
        a later request of the same conversation waits in ``process`` (never another one)."""
        with self._pending_lock:
            self._unrecorded[id(ex)] = ex
        key = _order_key(ex)
        if key is None:
            return
        done = threading.Event()
        with self._pending_lock:
            self._pending.setdefault(key, []).append(done)
        ex.pending_completion = (key, done)

    def complete(self, ex: Exchange, result: ResponseResult) -> None:
        ex.response = result
        stages = self.stages
        try:
            if self._hurry:  # stopping: the row, not the analysis
                ex.analyse_later, ex.layout_later = False, None
                if ex.forwarded:  # no stage has seen its request: only the row is written
                    stages = [s for s in stages if getattr(s, "name", None) in _RECORDS]
            elif ex.forwarded:
                replay_request(stages, ex)  # its request path, after the answer (FIFO: earlier ones ran)
            ex.yield_to_requests = self.yield_to_requests
            for stage in stages:
                if getattr(stage, "name", None) in _RECORDS and not self._take_row(ex):
                    continue  # recorded already, by ``record_unfinished``
                if ex.yield_to_requests is not None and not self._hurry:
                    ex.yield_to_requests()
                try:
                    stage.on_response(ex)
                except Exception:  # noqa: BLE001
                    log.exception("stage %s failed on response", stage.name)
        finally:
            ex.yield_to_requests = None
            self._completed(ex)

    def _take_row(self, ex: Exchange, now: bool = False) -> bool:
        """Whether the caller is the one to record ``ex`` (once: a completion, or ``record_unfinished``)."""
        with self._pending_lock:
            if now:  # only an exchange still waiting for its row
                if self._unrecorded.pop(id(ex), None) is not ex:
                    return False
                self._recorded_now[id(ex)] = ex
                return True
            if self._recorded_now.get(id(ex)) is ex:
                return False
            self._unrecorded.pop(id(ex), None)
            return True

    def _record(self, stages: Sequence[Stage], ex: Exchange) -> None:
        for stage in stages:
            if getattr(stage, "name", None) not in _RECORDS:
                continue
            for attempt in (1, 2):  # (its completion may be changing it meanwhile: a second look)
                try:
                    stage.on_response(ex)
                    break
                except Exception:  # noqa: BLE001
                    if attempt == 2:
                        log.exception("stage %s failed to record an unfinished exchange", stage.name)

    def _completed(self, ex: Exchange) -> None:
        with self._pending_lock:
            if self._unrecorded.get(id(ex)) is ex:  # (a chain without a recorder)
                del self._unrecorded[id(ex)]
        pending, ex.pending_completion = ex.pending_completion, None
        if pending is None:
            return
        key, done = pending
        with self._pending_lock:
            waiting = self._pending.get(key, [])
            if done in waiting:
                waiting.remove(done)
            if not waiting:
                self._pending.pop(key, None)
        done.set()

    def _busy(self, key: Hashable) -> bool:
        with self._pending_lock:
            return bool(self._pending.get(key))

    def _earlier(self, key: Hashable) -> list[threading.Event]:
        """``key``'s completions answered before now and not run yet."""
        with self._pending_lock:
            return [done for done in self._pending.get(key, ()) if not done.is_set()]

    def _still_busy(self, key: Hashable) -> bool:
        """Whether ``key``'s earlier completions are still running after ``own_wait_s`` (waited here)."""
        return not _all_done(self._earlier(key), time.monotonic() + self.own_wait_s)

    def _wait_for_earlier(self, ex: Exchange) -> None:
        """Until every completion of this request's conversation answered before now has run."""
        if not self._pending:
            return
        key = _order_key(ex)
        if key is None:
            return
        earlier = self._earlier(key)
        if not earlier:
            return
        started = time.monotonic()
        with self.aside():
            if not _all_done(earlier, started + self.order_wait_s):
                self.order_waits.record(time.monotonic() - started, timed_out=True)
                log.warning("the previous request of conversation %s/%s was still being analysed after %.0f s;"
                            " going on without waiting for it", key[0][:40], key[1][:40], self.order_wait_s)
                return
        self.order_waits.record(time.monotonic() - started, timed_out=False)


def _order_key(ex: Exchange) -> Hashable | None:
    """The conversation ``ex`` belongs to, as far as ordering goes: (session id, agent id); None when
    the body is not a parsed JSON object (nothing keeps state about it)."""
    key = ex.key
    if key is None:
        if not ex.parsed or not isinstance(ex.doc, dict):
            return None
        key = conversation_key(ex.request.headers, ex.doc)
    return (getattr(key, "session_id", str(key)), getattr(key, "agent_id", ""))


def _safe_bool(fn: Callable[[], bool]) -> bool:
    try:
        return bool(fn())
    except Exception:  # noqa: BLE001
        return False


def _all_done(events: Sequence[threading.Event], deadline: float) -> bool:
    """Whether every one of ``events`` is set by ``deadline`` (monotonic), waiting for them in turn."""
    return all(done.wait(max(0.0, deadline - time.monotonic())) for done in events)
