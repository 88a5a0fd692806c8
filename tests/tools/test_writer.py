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
