"""The wall clock, with a documented test setting to move it.

``SCALPEL_TEST_CLOCK_FILE`` (test setting, never for real use) names a file
holding a number of seconds; ``now()`` returns ``time.time()`` plus that
offset. The proxy and the emulated upstream both read it, so a test can jump
both past a cache TTL by writing one file, without sleeping.

"Today" means since local midnight everywhere (tray, statusline, dashboard,
``scalpel start`` and ``status``): ``start_of_today()`` is the one definition,
and it honours the test clock. Only the ``time`` module is used, so the hooks
and the statusline can call it without paying for ``datetime``.
"""

from __future__ import annotations

import os
import time

_cache: tuple[str, tuple[int, int], float] | None = None  # (path, (inode, mtime_ns), offset)


def offset() -> float:
    global _cache
    path = os.environ.get("SCALPEL_TEST_CLOCK_FILE")
    if not path:
        return 0.0
    try:
        st = os.stat(path)
    except OSError:
        return 0.0
    # set_offset replaces the file, so a new inode tells a rewrite apart even
    # within the file system's timestamp granularity.
    stamp = (st.st_ino, st.st_mtime_ns)
    if _cache and _cache[0] == path and _cache[1] == stamp:
        return _cache[2]
    try:
        with open(path, encoding="utf-8") as f:
            value = float(f.read().strip() or 0)
    except (OSError, ValueError):
        value = 0.0
    _cache = (path, stamp, value)
    return value


def now() -> float:
    return time.time() + offset()


_now = now  # for the functions below, whose ``now`` argument hides it


def start_of_day(t: float) -> float:
    """Local midnight at the start of the day holding ``t`` (DST-aware, like the OS's local time)."""
    lt = time.localtime(t)
    return time.mktime((lt.tm_year, lt.tm_mon, lt.tm_mday, 0, 0, 0, 0, 0, -1))


def start_of_today(now: float | None = None) -> float:
    """Local midnight today; ``now`` defaults to ``now()`` (so the test clock moves it too)."""
    return start_of_day(_now() if now is None else now)


def day_starts(now: float | None, days: int) -> list[float]:
    """Local midnights of the last ``days`` days, oldest first (today's last)."""
    starts = [start_of_today(now)]
    while len(starts) < days:
        # Noon of the day before, then its midnight: right across DST changes.
        starts.append(start_of_day(starts[-1] - 12 * 3600))
    return starts[::-1]


def set_offset(path: str | os.PathLike, seconds: float) -> None:
    """Tests: move every process reading ``path`` by ``seconds``."""
    from scalpel_desktop.atomicfile import write_atomic

    write_atomic(path, repr(float(seconds)).encode("ascii"), fsync=False)
