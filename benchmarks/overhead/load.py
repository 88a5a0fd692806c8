"""scalpel's RSS over many requests, and 200 concurrent streams per path.

``memory``: 10 conversations of about 2.6 MB (grown with 30 KB Read results,
as the issue measured it), one turn each in turn, back to back, on scalpel's
keep-alive connection; RSS before, after half and after all. ``concurrent``:
one aiohttp connection per body, all sent at once; errors and latencies.
(``benchmarks/proxy_memory.py`` measures memory on its own.)
"""

from __future__ import annotations

import asyncio
import sys
import time

from overhead.bodies import Conversation
from overhead.paths import PathClient, rss_mb
from overhead.upstreams import END


def memory(scalpel: PathClient, capture, requests: int, tags) -> tuple[float, float, float]:
    """scalpel's RSS (MB) before, after half and after ``requests`` requests over 10
    conversations of about 2.6 MB, one turn each in turn, back to back."""
    growth, Conversation.growth = Conversation.growth, "reads"  # as the issue measured it, and ~100x faster
    convs = [Conversation(capture, 2_600_000, next(tags)) for _ in range(10)]
    Conversation.growth = growth
    before = rss_mb(scalpel.pid)
    half = before
    for i in range(requests):
        c = convs[i % len(convs)]
        c.add_turn()
        scalpel.call(c.body(), c.headers)
        if i + 1 == requests // 2:
            half = rss_mb(scalpel.pid)
        if (i + 1) % 100 == 0:
            print(f"  {i + 1} requests, RSS {rss_mb(scalpel.pid):.0f} MB", file=sys.stderr)
    time.sleep(1.0)
    return before, half, rss_mb(scalpel.pid)


async def _concurrent(port: int, bodies: list[tuple[bytes, dict]]) -> tuple[int, list[float]]:
    import aiohttp

    async def one(session, body, headers) -> float | None:
        t0 = time.perf_counter()
        try:
            async with session.post(f"http://127.0.0.1:{port}/v1/messages?beta=true", data=body, headers=headers) as r:
                data = await r.read()
                if r.status != 200 or not data.endswith(END):
                    return None
        except (aiohttp.ClientError, asyncio.TimeoutError, OSError):
            return None
        return time.perf_counter() - t0

    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0),
                                     timeout=aiohttp.ClientTimeout(total=120), auto_decompress=False) as s:
        got = await asyncio.gather(*(one(s, b, h) for b, h in bodies))
    return sum(1 for g in got if g is None), [g for g in got if g is not None]


def concurrent(port: int, bodies: list[tuple[bytes, dict]]) -> tuple[int, list[float]]:
    """(errors, seconds of each call that succeeded) of ``bodies`` sent all at once."""
    return asyncio.run(_concurrent(port, bodies))
