"""tools/writer.py: the background writer runs writes in order, drops on a full queue, survives failures."""

from __future__ import annotations

import threading

from scalpel_desktop.tools.writer import BackgroundWriter


def test_writes_run_in_order_off_the_callers_thread():
    w = BackgroundWriter()
    seen = []
    for i in range(5):
        w.submit(lambda i=i: seen.append((i, threading.current_thread().name)))
    assert w.flush()
    assert [i for i, _ in seen] == [0, 1, 2, 3, 4]
    assert {name for _, name in seen} == {"scalpel-tools-writer"}
    w.close()


def test_a_failing_write_is_counted_and_the_next_one_still_runs():
    w = BackgroundWriter()
    out = []
    w.submit(lambda: 1 / 0)
    w.submit(out.append, "after")
    assert w.flush()
    assert w.failed == 1 and out == ["after"]
    w.close()


def test_a_full_queue_drops_the_write_and_counts_it():
    w = BackgroundWriter(maxsize=1)
    gate = threading.Event()
    started = threading.Event()
    w.submit(lambda: (started.set(), gate.wait(10)))
    assert started.wait(10)
    w.submit(lambda: None)  # fills the one slot
    w.submit(lambda: None)  # dropped
    w.submit(lambda: None)  # dropped
    assert w.dropped == 2
    gate.set()
    assert w.flush()
    w.close()


def test_flush_on_a_full_queue_waits_for_room_and_says_when_all_has_run():
    w = BackgroundWriter(maxsize=1)
    gate = threading.Event()
    started = threading.Event()
    ran = []
    w.submit(lambda: (started.set(), gate.wait(10)))
    assert started.wait(10)
    w.submit(ran.append, "queued")  # the queue is full now
    threading.Timer(0.2, gate.set).start()
    assert w.flush(timeout=20)  # the old flush dropped its marker: False after all 20 s
    assert ran == ["queued"]
    w.close()


def test_close_stops_the_thread():
    w = BackgroundWriter()
    w.close()
    assert not w._thread.is_alive()


def test_a_write_that_meets_another_programs_lock_waits_for_it_and_is_not_lost(tmp_path, caplog):
    """Issue 25: 3 inventory writes were dropped with tracebacks under a 30 s lock."""
    import logging
    import sqlite3

    from tests.support.db_lock import exclusive_lock

    path = tmp_path / "t.sqlite3"
    setup = sqlite3.connect(path)
    setup.execute("PRAGMA journal_mode=WAL")
    setup.execute("CREATE TABLE t (x)")
    setup.commit()
    setup.close()
    conn = sqlite3.connect(path, timeout=0.05, check_same_thread=False)

    def write(x):
        with conn:
            conn.execute("INSERT INTO t VALUES (?)", (x,))

    w = BackgroundWriter()
    caplog.set_level(logging.INFO, logger="scalpel.tools")
    with exclusive_lock(path):
        for i in range(3):
            w.submit(write, i)
        assert not w.flush(timeout=0.5)  # still waiting on the lock
        assert w.locked_since is not None
    assert w.flush(timeout=10)
    assert [r[0] for r in conn.execute("SELECT x FROM t ORDER BY x")] == [0, 1, 2]
    assert w.failed == 0 and w.locked_since is None
    assert not [r for r in caplog.records if r.exc_info]  # no traceback for a lock
    w.close()
    conn.close()


def test_a_stop_gives_up_on_a_locked_write_by_its_timeout(tmp_path):
    import sqlite3
    import time

    from tests.support.db_lock import exclusive_lock

    path = tmp_path / "t.sqlite3"
    sqlite3.connect(path).execute("CREATE TABLE t (x)").connection.commit()
    conn = sqlite3.connect(path, timeout=0.05, check_same_thread=False)
    w = BackgroundWriter()
    with exclusive_lock(path):
        w.submit(lambda: conn.execute("INSERT INTO t VALUES (1)"))
        t0 = time.monotonic()
        w.close(timeout=0.5)
        assert time.monotonic() - t0 < 3.0
    assert w.failed == 1
    conn.close()
