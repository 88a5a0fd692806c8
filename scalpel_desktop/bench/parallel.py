"""Replay a corpus's sequences on several processes, the results in their order.

Every sequence replays on its own (``replay.replay_sequence``: its own
simulator, bodies and stages; the only thing the sequences share, the corpus's
pooled token ratio and each one's ledger history, is computed from the corpus
alone), so they can go to worker processes and come back in any order: the
result list is put back in the corpus's order, the same figures as one process
gives. Workers are forked (they inherit the parsed corpus, nothing is sent to
them but an index); where fork is not offered, or for one job, it runs here.
The longest sequences go first, so the last one to finish is short.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Sequence
from typing import Any

_JOB: Callable[[int], Any] | None = None  # what a forked worker runs (set before the fork)

FAILED = object()  # a job that raised: counted by the caller, not fatal


def default_jobs() -> int:
    """One job per core this process may use, at most 4."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(1, min(4, cores))


def can_fork() -> bool:
    return "fork" in multiprocessing.get_all_start_methods()


def run_all(job: Callable[[int], Any], n: int, jobs: int = 1, weights: Sequence[int] | None = None,
            progress: Callable[[int, int], None] | None = None) -> list[Any]:
    """``[job(0), ..., job(n - 1)]`` (``FAILED`` where it raised), on ``jobs`` processes.

    ``weights``: the relative cost of each job (the longest start first)."""
    if jobs <= 1 or n < 2 or not can_fork():
        out = []
        for i in range(n):
            out.append(_guarded(job, i))
            if progress:
                progress(i + 1, n)
        return out
    global _JOB
    order = sorted(range(n), key=lambda i: -(weights[i] if weights is not None else 0))
    out = [FAILED] * n
    _JOB = job
    try:
        with multiprocessing.get_context("fork").Pool(min(jobs, n), initializer=_fresh_child) as workers:
            for done, (i, res) in enumerate(workers.imap_unordered(_run, order), 1):
                out[i] = FAILED if isinstance(res, _Failed) else res
                if progress:
                    progress(done, n)
    finally:
        _JOB = None
    return out


def _guarded(job: Callable[[int], Any], i: int) -> Any:
    try:
        return job(i)
    except Exception:  # noqa: BLE001 - the caller counts it (a session that breaks the bench)
        return FAILED


def _run(i: int) -> tuple[int, Any]:
    assert _JOB is not None
    res = _guarded(_JOB, i)
    return i, (_Failed() if res is FAILED else res)


class _Failed:
    """``FAILED`` across the process boundary (an ``object()`` does not keep its identity there)."""


def _fresh_child() -> None:
    """In a forked worker: nothing the parent had open is used (an SQLite connection must not
    cross a fork)."""
    from scalpel_desktop.bench import stage_driver

    stage_driver._LOG_TEMPLATE = None
