"""The completion pool: one conversation's completions in order, others beside them, requests first."""

from __future__ import annotations

import threading
import time

import pytest
from hypothesis import given, settings, strategies as st

from scalpel_desktop.proxy.completer import KeyedPool, RequestsFirst


def test_a_conversation_s_completions_run_in_order_and_one_at_a_time():
    pool = KeyedPool(4)
    seen: list[int] = []
    running = []
    lock = threading.Lock()

    def job(i):
        with lock:
            running.append(i)
            assert len(running) == 1, running  # never two of one key at once
        time.sleep(0.002)
        seen.append(i)
        with lock:
            running.remove(i)

    futures = [pool.submit_in("conv", job, i) for i in range(30)]
    for f in futures:
        f.result(timeout=10)
    pool.shutdown()
    assert seen == list(range(30))


def test_another_conversation_does_not_wait_behind_a_slow_one():
    pool = KeyedPool(2)
    release = threading.Event()
    slow = pool.submit_in("big", release.wait, 10)
    t0 = time.monotonic()
    quick = pool.submit_in("small", lambda: "done")
    assert quick.result(timeout=5) == "done"
    assert time.monotonic() - t0 < 2.0
    assert not slow.done()  # the slow one is still running: the small one went beside it
    release.set()
    slow.result(timeout=5)
    pool.shutdown()


def test_a_key_s_later_completion_waits_for_the_earlier_even_on_a_free_thread():
    pool = KeyedPool(3)
    release = threading.Event()
    first = pool.submit_in("k", release.wait, 10)
    second = pool.submit_in("k", lambda: "second")
    time.sleep(0.1)
    assert not second.done()  # two threads idle, yet it waits for its conversation's first
    release.set()
    assert second.result(timeout=5) == "second"
    assert first.result(timeout=5) is True
    pool.shutdown()


def test_an_exception_reaches_the_caller_and_the_key_goes_on():
    pool = KeyedPool(2)

    def boom():
        raise ValueError("bad row")

    failed = pool.submit_in("k", boom)
    after = pool.submit_in("k", lambda: 7)
    with pytest.raises(ValueError):
        failed.result(timeout=5)
    assert after.result(timeout=5) == 7
    assert pool.pending() == []
    pool.shutdown()


def test_pending_lists_what_is_not_done_and_shutdown_cancels_what_waits():
    pool = KeyedPool(1)
    release = threading.Event()
    running = pool.submit_in("a", release.wait, 10)
    queued = pool.submit_in("a", lambda: None)
    other = pool.submit_in("b", lambda: None)
    time.sleep(0.05)
    assert set(pool.pending()) == {running, queued, other}
    pool.shutdown(wait=False, cancel_futures=True)
    release.set()
    assert running.result(timeout=5) is True  # started: it runs to its end
    assert queued.cancelled()
    with pytest.raises(RuntimeError):
        pool.submit_in("a", lambda: None)


def test_a_completion_waits_while_a_request_is_on_its_request_path_but_not_for_long():
    gate = RequestsFirst(quiet_s=0.005, max_defer_s=0.3)
    ticket = gate.entered()
    t0 = time.monotonic()
    gate.wait_turn()
    waited = time.monotonic() - t0
    assert 0.25 <= waited < 1.0  # held to the cap, never longer
    ticket.sent()
    ticket.finished()
    t0 = time.monotonic()
    gate.wait_turn()
    assert time.monotonic() - t0 < 0.1  # no request: at once
    assert gate.deferred == 1


def test_a_completion_starts_once_the_request_has_left_upstream_and_the_stream_is_quiet():
    gate = RequestsFirst(quiet_s=0.02, max_defer_s=5.0)
    pool = KeyedPool(1, gate=gate)
    ticket = gate.entered()
    fut = pool.submit_in("k", lambda: time.monotonic())
    time.sleep(0.2)
    assert not fut.done()  # the request is still being read and sent
    sent_at = time.monotonic()
    ticket.sent()  # waiting on its upstream now: the completion may run
    started = fut.result(timeout=5)
    assert started - sent_at < 1.0
    ticket.finished()
    ticket.finished()  # twice is harmless
    pool.shutdown()


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from("abc"), min_size=1, max_size=40), st.integers(1, 4))
def test_every_key_keeps_its_submission_order(keys, workers):
    pool = KeyedPool(workers)
    done: list[tuple[str, int]] = []
    lock = threading.Lock()

    def job(key, i):
        with lock:
            done.append((key, i))

    futures = [pool.submit_in(k, job, k, i) for i, k in enumerate(keys)]
    for f in futures:
        f.result(timeout=10)
    pool.shutdown()
    for key in set(keys):
        assert [i for k, i in done if k == key] == [i for i, k in enumerate(keys) if k == key]
    assert len(done) == len(keys)


def test_a_request_waiting_for_its_own_completion_does_not_hold_that_completion():
    gate = RequestsFirst(quiet_s=0.005, max_defer_s=5.0)
    ticket = gate.entered()  # on its request path ...
    with gate.aside():  # ... waiting in the chain for its conversation's completion
        t0 = time.monotonic()
        gate.wait_turn()
        assert time.monotonic() - t0 < 1.0  # the completion it waits for starts at once
    t0 = time.monotonic()
    threading.Timer(0.2, ticket.sent).start()
    gate.wait_turn()  # back on its path: held again, until it has left upstream
    assert time.monotonic() - t0 >= 0.15
    ticket.finished()
