"""Large requests' memory is given back once they are all done (not while one is in flight)."""

from __future__ import annotations

import asyncio
import time

from scalpel_desktop.proxy import trim as trim_mod
from scalpel_desktop.proxy.trim import Trimmer


def test_a_trim_follows_a_large_batch_once_nothing_is_in_flight(monkeypatch):
    calls = []
    monkeypatch.setattr(trim_mod, "trim", lambda: calls.append(1) or True)

    async def scenario() -> Trimmer:
        t = Trimmer(idle_s=0.01, min_bytes=1000)
        t.started()
        t.started()
        t.finished(800)  # one still in flight: nothing yet
        await asyncio.sleep(0.05)
        assert calls == []
        t.finished(800)  # all done, 1,600 bytes: a trim is due after the idle time
        deadline = time.monotonic() + 10
        while not calls and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        t.started()
        t.finished(10)  # small: no further trim
        await asyncio.sleep(0.05)
        return t

    t = asyncio.run(scenario())
    assert calls == [1] and t.in_flight == 0


def test_trim_and_the_arena_cap_are_safe_to_call():
    assert isinstance(trim_mod.trim(), bool) and isinstance(trim_mod.limit_arenas(2), bool)



def test_steady_traffic_that_is_never_idle_is_trimmed_every_busy_bytes(monkeypatch):
    """Requests back to back, one always in flight: a trim after each ``busy_bytes`` finished,
    never two at once, and none for traffic below it."""
    calls = []
    monkeypatch.setattr(trim_mod, "trim", lambda: calls.append(1) or True)
    monkeypatch.setattr(trim_mod, "_LIBC", object())  # as on glibc, wherever the test runs

    async def scenario() -> Trimmer:
        t = Trimmer(idle_s=3600, min_bytes=1 << 40, busy_bytes=1000)
        t.started()  # one request stays in flight throughout: never idle
        for _ in range(5):
            t.started()
            t.finished(300)  # 1,500 bytes: one trim due
        deadline = time.monotonic() + 10
        while len(calls) < 1 and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        for _ in range(4):
            t.started()
            t.finished(300)  # 1,200 more: a second
        while len(calls) < 2 and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        t.started()
        t.finished(100)  # below the mark: nothing more
        await asyncio.sleep(0.05)
        return t

    t = asyncio.run(scenario())
    assert calls == [1, 1] and t.trims == 2 and t.in_flight == 1


def test_busy_trims_during_a_burst_never_stand_in_for_the_trim_once_it_is_done(monkeypatch):
    """A burst that crosses ``busy_bytes`` many times: the trims in its middle give back little (its
    documents are alive), so the idle trim still follows once nothing is in flight."""
    calls = []
    monkeypatch.setattr(trim_mod, "trim", lambda: calls.append(time.monotonic()) or True)
    monkeypatch.setattr(trim_mod, "_LIBC", object())

    async def scenario() -> tuple[Trimmer, float]:
        t = Trimmer(idle_s=0.05, min_bytes=1000, busy_bytes=300)
        for _ in range(10):
            t.started()
        for i in range(10):
            t.finished(400)  # each crosses busy_bytes: a busy trim, done before the next ends
            deadline = time.monotonic() + 10
            while len(calls) < i + 1 and time.monotonic() < deadline:
                await asyncio.sleep(0.001)
            while t._trimming and time.monotonic() < deadline:
                await asyncio.sleep(0.001)
        done = time.monotonic()
        deadline = done + 10
        while (not calls or calls[-1] < done + 0.04) and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        return t, done

    t, done = asyncio.run(scenario())
    assert len(calls) >= 2 and calls[-1] >= done + 0.04  # the last one came after the idle time
    assert t.in_flight == 0
