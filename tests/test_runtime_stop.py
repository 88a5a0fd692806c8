"""A stop keeps every row and ends by its deadline: the queued work drains until a reserve, hurry cuts it short."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

from scalpel_desktop.runtime_stop import ROWS_RESERVE_S, close_in_time, drain, keep_rows


class FakeChain:
    """Only what the stop asks of the pipeline: hurry, then record what is still unrecorded."""

    def __init__(self, unfinished: int):
        self.hurried = False
        self.unfinished = unfinished

    def hurry(self):
        self.hurried = True

    def record_unfinished(self) -> int:
        return self.unfinished


def test_drain_waits_for_what_was_queued():
    pool = ThreadPoolExecutor(max_workers=1)
    done = []
    for i in range(5):
        pool.submit(lambda i=i: (time.sleep(0.01), done.append(i)))
    assert drain(pool, time.monotonic() + 5)
    assert done == [0, 1, 2, 3, 4]
    pool.shutdown()


def test_drain_gives_up_at_its_time_or_when_hurried():
    pool = ThreadPoolExecutor(max_workers=1)
    release = threading.Event()
    pool.submit(release.wait)
    t0 = time.monotonic()
    assert not drain(pool, time.monotonic() + 0.1)
    assert time.monotonic() - t0 < 1.0
    hurry = threading.Event()
    threading.Timer(0.05, hurry.set).start()
    t0 = time.monotonic()
    assert not drain(pool, time.monotonic() + 30, hurry)
    assert time.monotonic() - t0 < 1.0
    release.set()
    pool.shutdown()


def test_drain_of_a_pool_already_shut_down_is_done():
    pool = ThreadPoolExecutor(max_workers=1)
    pool.shutdown()
    assert drain(pool, time.monotonic() + 1)


def test_keep_rows_hurries_the_chain_and_records_the_unfinished_by_the_reserve():
    chain = FakeChain(unfinished=3)
    pool = ThreadPoolExecutor(max_workers=1)
    release = threading.Event()
    pool.submit(release.wait)  # an analysis that would run for ever
    deadline = time.monotonic() + ROWS_RESERVE_S + 0.2
    t0 = time.monotonic()
    assert keep_rows(chain, [pool, None], deadline, threading.Event()) == 3
    assert chain.hurried
    assert time.monotonic() - t0 < 0.2 + 0.5  # left the reserve for the ledger
    release.set()


def test_close_in_time_does_not_wait_past_the_deadline_on_a_stuck_close():
    stuck = threading.Event()
    t0 = time.monotonic()
    assert not close_in_time(stuck.wait, 30, deadline=time.monotonic() + 0.1)
    assert time.monotonic() - t0 < 1.0
    stuck.set()
    assert close_in_time(lambda: None, deadline=time.monotonic() + 1)
