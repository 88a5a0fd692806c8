"""The wall clock, with a documented test setting to move it.

``SCALPEL_TEST_CLOCK_FILE`` (test setting, never for real use) names a file
holding a number of seconds; ``now()`` returns ``time.time()`` plus that
offset. The proxy and the emulated upstream both read it, so a test can jump
both past a cache TTL by writing one file, without sleeping.
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


def set_offset(path: str | os.PathLike, seconds: float) -> None:
    """Tests: move every process reading ``path`` by ``seconds``."""
    from scalpel_desktop.atomicfile import write_atomic

    write_atomic(path, repr(float(seconds)).encode("ascii"), mode=0o644, fsync=False)
