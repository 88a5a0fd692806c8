"""Large requests' memory is given back once they are all done (not while one is in flight)."""

from __future__ import annotations

import asyncio
import time

import pytest

from scalpel_desktop.proxy import memtrace
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
    assert isinstance(trim_mod.map_large_blocks(), bool)



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


_PARSES = r'''
import json, sys
import orjson
from scalpel_desktop.proxy.trim import map_large_blocks
from scalpel_desktop.proxy.memtrace import heap
if sys.argv[1] == "pinned":
    assert map_large_blocks()
keep, pool = None, 0
base = heap()["arena"]
for n in (30000, 28000, 26000, 29000, 27000):  # ~1.5 MB bodies, the largest first
    body = json.dumps({"messages": [{"role": "user", "content": f"message {i} " + "x" * 40}
                                    for i in range(n)]}).encode()
    pool = max(pool, len(body) // 2 * 24)  # orjson's parse pool for this body
    keep = orjson.loads(body)  # one document alive at a time, as the memo keeps one
    del body
print(json.dumps({"grown": heap()["arena"] - base, "pool": pool}))
'''


def test_a_full_parse_pool_leaves_no_hole_in_the_heap_once_the_mmap_threshold_is_pinned(tmp_path):
    """orjson parses a body of n bytes in one pool of about 12 n bytes. With glibc's dynamic
    threshold, the first pool is mapped, the threshold rises to its size, and the later, smaller
    ones are carved out of the heap, which keeps their pages: it grows by pools. Pinned, it grows
    by about the bodies alone. Each case runs in a fresh process (the setting is process-wide)."""
    import json
    import subprocess
    import sys

    if trim_mod._LIBC is None or memtrace.heap() is None:
        pytest.skip("glibc only")
    script = tmp_path / "parses.py"
    script.write_text(_PARSES)
    got = {}
    for case in ("pinned", "dynamic"):
        out = subprocess.run([sys.executable, str(script), case], capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        got[case] = json.loads(out.stdout)
    pool = got["pinned"]["pool"]
    assert pool > trim_mod.MMAP_THRESHOLD  # the pools are what the pin maps
    assert got["pinned"]["grown"] < pool  # no pool stayed in the heap
    assert got["dynamic"]["grown"] > got["pinned"]["grown"] + pool  # (without the pin, some did)
