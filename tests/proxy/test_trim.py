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


def test_the_mmap_threshold_is_fixed_where_glibc_is():
    """glibc takes the fixed threshold (mallopt answers 1); elsewhere it is a no-op that says so."""
    assert trim_mod.fix_mmap_threshold() is (trim_mod._LIBC is not None)
    if trim_mod._LIBC is not None:
        # A body-sized block allocated and freed is its own mapping, returned at once: the heap's
        # free bytes do not grow by it (mallinfo2: glibc >= 2.33; skipped below that).
        from scalpel_desktop.proxy.memtrace import heap
        before = heap()
        if before is not None:
            block = bytes(8 * 1024 * 1024)
            assert heap()["mmapped"] >= before["mmapped"] + 8 * 1024 * 1024
            del block
            assert heap()["free"] < before["free"] + 8 * 1024 * 1024
