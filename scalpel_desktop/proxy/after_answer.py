"""What runs after the answer: the pipeline's completion, off the request path.

``complete`` (the ledger row, a first sighting's analysis) runs on a thread of
its own (``completer``: the runtime's ``scalpel-complete`` executor, one
thread, first in first out), never on the pool the requests use: a request
waiting in ``Chain.process`` for its conversation's completion must never
hold the thread that completion needs. ``answered`` tells the pipeline first,
so that conversation's next request waits for it and no other one does.
``observe`` is the observe-only pipeline's whole run after the answer.
``background`` keeps a reference to work nobody awaits.
"""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import Executor, ThreadPoolExecutor
from typing import Any

from scalpel_desktop.exchange import ApiRequest, Exchange, Pipeline, ResponseResult

log = logging.getLogger("scalpel.proxy")

_DEFAULT_COMPLETER: Executor | None = None


def completer(opts: Any) -> Executor:
    """Where completions run: one thread of their own, first in first out (a request waiting for its
    conversation's completion must never hold the thread that completion needs)."""
    global _DEFAULT_COMPLETER
    if opts.completer is not None:
        return opts.completer
    if _DEFAULT_COMPLETER is None:
        _DEFAULT_COMPLETER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="scalpel-complete")
    return _DEFAULT_COMPLETER


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
