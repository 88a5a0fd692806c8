"""What runs after the answer: the pipeline's completion, off the request path.

``complete`` (the ledger row, a first sighting's analysis) runs on the
completion pool (``completer``: the runtime's ``scalpel-complete``
``KeyedPool``, ``proxy/completer.py``), never on the pool the requests use: a
request waiting in ``Chain.process`` for its conversation's completion must
never hold the thread that completion needs. ``answered`` tells the pipeline
first; ``run_completion`` then queues the completion under its
conversation's key (``ex.pending_completion``), so one conversation's
completions run in order and other conversations' run beside them.
``observe`` is the observe-only pipeline's whole run after the answer.
``background`` keeps a reference to work nobody awaits.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from concurrent.futures import Executor
from typing import Any

from scalpel_desktop.exchange import ApiRequest, Exchange, Pipeline, ResponseResult
from scalpel_desktop.proxy.completer import KeyedPool, RequestsFirst

log = logging.getLogger("scalpel.proxy")

_DEFAULT_COMPLETER: Executor | None = None
# A completion's analysis is pure Python on a thread of the pool; the event loop streaming answers
# needs the interpreter lock once per chunk. CPython hands it over after the switch interval (5 ms
# by default): an answer of 30 chunks then waits 150 ms behind two analyses. 0.5 ms makes that 15.
SWITCH_INTERVAL_S = 0.0005


def pool_size() -> int:
    """The completion pool's threads: the cores, two at least."""
    return max(2, os.cpu_count() or 2)


def completion_pool(chain: Any = None) -> KeyedPool:
    """The runtime's completion pool: sized to the cores, its starts held while requests need the CPU
    (but not for a request of ``chain`` that waits for its own conversation's completion)."""
    gate = RequestsFirst()
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    if chain is not None:
        chain.aside, chain.yield_to_requests = gate.aside, gate.wait_turn
    return KeyedPool(pool_size(), gate=gate)


def completer(opts: Any) -> Executor:
    """Where completions run: a pool of their own (a request waiting for its conversation's completion
    must never hold the thread that completion needs)."""
    global _DEFAULT_COMPLETER
    if opts.completer is not None:
        return opts.completer
    if _DEFAULT_COMPLETER is None:
        _DEFAULT_COMPLETER = KeyedPool(pool_size())
    return _DEFAULT_COMPLETER


def run_completion(opts: Any, pipeline: Pipeline, ex: Exchange, result: ResponseResult) -> asyncio.Future:
    """``complete`` on the completion pool, after the completions of ``ex``'s conversation queued
    before it (a pool without keys: in its own order)."""
    pool = completer(opts)
    pending = ex.pending_completion
    key = pending[0] if isinstance(pending, tuple) and pending else None
    if isinstance(pool, KeyedPool):
        return asyncio.wrap_future(pool.submit_in(key, complete, pipeline, ex, result))
    return asyncio.get_running_loop().run_in_executor(pool, complete, pipeline, ex, result)


def answered(pipeline: Pipeline, ex: Exchange, result: ResponseResult | None = None) -> None:
    """``result`` is on the exchange from now: a stop may record its row before its completion runs
    (``Chain.record_unfinished``)."""
    if result is not None:
        ex.response = result
    answered = getattr(pipeline, "answered", None)
    if answered is None:
        return
    try:
        answered(ex)
    except Exception:  # noqa: BLE001 - ordering is the pipeline's; never the answer's problem
        log.exception("pipeline failed to note an answer")


def background(opts: Any, fut: asyncio.Future) -> None:
    """Keep ``fut`` referenced until done; it counts as in flight for the trimmer (a first
    sighting sent as it came is parsed and analysed here: its memory is freed only when this ends)."""
    opts._pending.add(fut)
    fut.add_done_callback(opts._pending.discard)
    trimmer = opts.trimmer
    if trimmer is not None:
        trimmer.started()
        fut.add_done_callback(lambda _f: trimmer.finished(0))


def complete(pipeline: Pipeline, ex: Exchange, result: ResponseResult) -> None:
    try:
        pipeline.complete(ex, result)
    except Exception:  # noqa: BLE001
        log.exception("pipeline failed on response")


def observe(pipeline: Any, request: ApiRequest, result: ResponseResult, paused: bool) -> None:
    """An observe-only pipeline sees the request and its answer after the client got it,
    with the pause switch as it was when the request was forwarded."""
    try:
        ex = pipeline.process(request, paused=paused)
    except Exception:  # noqa: BLE001
        log.exception("pipeline failed while observing")
        return
    complete(pipeline, ex, result)
