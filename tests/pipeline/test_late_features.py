"""Surgery and the tool filter come on when the database can be used: at once, later by themselves, never after stop."""

from __future__ import annotations

import sqlite3
import threading
import time

from scalpel_desktop.pipeline.late_features import LateFeatures


def wait_until(cond, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


def test_stages_built_in_time_are_returned_and_nothing_is_handed_over_later():
    said, handed = [], []
    lf = LateFeatures(wait_s=2.0, on_error=said.append)
    assert lf.first(lambda: ["surgery", "tools"]) == ["surgery", "tools"]
    lf.deliver_to(handed.append)
    wait_until(lambda: not lf.pending)
    assert handed == [] and said == [] and lf.attempts == 1 and not lf.built_late


def test_a_locked_database_leaves_the_features_out_then_they_come_on_by_themselves():
    """The port must not wait on the lock; the features must not stay off for the whole process."""
    unlocked = threading.Event()
    said, handed, closed = [], [], []

    def build():
        if not unlocked.is_set():
            raise sqlite3.OperationalError("database is locked")
        return ["surgery"]

    lf = LateFeatures(wait_s=0.2, first_retry_s=0.02, max_retry_s=0.05, on_error=said.append, close=closed.append)
    t0 = time.monotonic()
    assert lf.first(build) is None
    assert time.monotonic() - t0 < 1.0  # waited wait_s at most, not for the lock
    lf.deliver_to(handed.append)
    wait_until(lambda: lf.attempts >= 3)
    assert handed == [] and said and "locked" in said[-1]
    unlocked.set()
    wait_until(lambda: handed)
    assert handed == [["surgery"]] and said[-1] is None and lf.built_late and closed == []
    wait_until(lambda: not lf.pending)


def test_stages_built_before_the_sink_exists_wait_for_it():
    gate = threading.Event()
    lf = LateFeatures(wait_s=0.05)

    def build():
        gate.wait(5)
        return ["late"]

    assert lf.first(build) is None
    gate.set()
    wait_until(lambda: not lf.pending)
    handed = []
    lf.deliver_to(handed.append)
    assert handed == [["late"]]


def test_stages_built_after_stop_are_closed_never_handed_over():
    gate = threading.Event()
    handed, closed = [], []
    lf = LateFeatures(wait_s=0.05, close=closed.append)

    def build():
        gate.wait(5)
        return ["orphan"]

    assert lf.first(build) is None
    lf.deliver_to(handed.append)
    lf.stop()
    gate.set()
    wait_until(lambda: not lf.pending)
    assert handed == [] and closed == [["orphan"]]


def test_stop_ends_the_retries():
    lf = LateFeatures(wait_s=0.05, first_retry_s=10.0)

    def build():
        raise OSError("read-only file system")

    assert lf.first(build) is None
    lf.stop()
    wait_until(lambda: not lf.pending, timeout=2.0)  # did not sleep its 10 s retry
    assert lf.attempts == 1


def test_a_sink_that_fails_leaves_the_features_off_and_closes_them():
    closed = []
    lf = LateFeatures(wait_s=0.0, first_retry_s=0.01, close=closed.append)
    gate = threading.Event()

    def build():
        gate.wait(5)
        return ["x"]

    assert lf.first(build) is None

    def bad_sink(stages):
        raise RuntimeError("chain gone")

    lf.deliver_to(bad_sink)
    gate.set()
    wait_until(lambda: closed)
    assert closed == [["x"]] and not lf.built_late
