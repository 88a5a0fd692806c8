"""The off-path worker: a bound for the caller, the job runs on, retried writes land."""

from __future__ import annotations

import sqlite3
import threading

from scalpel_desktop.store import offpath
from scalpel_desktop.store.offpath import Worker


def test_a_quick_job_is_done_within_the_bound():
    w = Worker("t")
    job = w.call(lambda: 42, 5.0)
    assert job.done and job.result == 42 and job.error is None and not w.busy


def test_a_blocked_job_leaves_the_caller_and_finishes_later():
    w = Worker("t")
    gate = threading.Event()
    job = w.call(lambda: gate.wait(10) and "written", 0.01)
    assert not job.done and w.busy  # the caller went on without it
    gate.set()
    assert job.wait(10) and job.result == "written" and not w.busy


def test_a_retried_write_is_retried_until_it_lands(monkeypatch):
    monkeypatch.setattr(offpath, "RETRY_FIRST_S", 0.001)
    w = Worker("t")
    tries = []

    def flaky():
        tries.append(1)
        if len(tries) < 3:
            raise sqlite3.OperationalError("database is locked")
        return "ok"

    job = w.submit(flaky, retry=True)
    assert job.wait(10) and job.result == "ok" and job.attempts == 3 and w.retried == 2


def test_without_retry_or_on_a_bug_the_job_ends_with_its_error():
    w = Worker("t")
    locked = w.submit(lambda: (_ for _ in ()).throw(sqlite3.OperationalError("locked")))
    bug = w.submit(lambda: 1 / 0, retry=True)
    assert locked.wait(10) and isinstance(locked.error, sqlite3.OperationalError) and locked.attempts == 1
    assert bug.wait(10) and isinstance(bug.error, ZeroDivisionError) and bug.attempts == 1
