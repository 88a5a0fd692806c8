"""What holds the proxy's memory, on request: a diagnosis switch, off unless asked for.

``SCALPEL_MEMTRACE=DIR`` in the proxy's environment starts ``tracemalloc`` at
start-up and a daemon thread that watches ``DIR/dump``: when that file
appears (its text is a label), the thread collects garbage and writes
``DIR/<label>.txt``: the resident size, glibc's heap figures (``mallinfo2``:
in use, free, mmapped), gc counts, threads, what each pipeline stage says it
holds (``nbytes`` against its budget), and tracemalloc's top allocation sites.
``benchmarks/proxy_memory.py`` asks for one at its 500th and last request and
after its burst. Tracing slows the proxy and costs memory of its own: use it
to find what is held, never to measure RSS or speed. ``SCALPEL_MEMTRACE_FRAMES=0``
writes the same report without tracing (the heap figures and pymalloc's
arenas, undistorted: tracemalloc's own records live in the heap it reports).
"""

from __future__ import annotations

import ctypes
import gc
import logging
import os
import sys
import tempfile
import threading
import time
import tracemalloc
from pathlib import Path
from typing import Any, Iterable

log = logging.getLogger("scalpel.proxy")

ENV = "SCALPEL_MEMTRACE"
TOP = 40


class _Mallinfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
                 "keepcost")]


def heap() -> dict[str, int] | None:
    """glibc's heap: bytes in use, free in the arenas, and mmapped (None elsewhere)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL("libc.so.6")
        fn = libc.mallinfo2
    except (OSError, AttributeError):
        return None
    fn.restype = _Mallinfo2
    m = fn()
    return {"in_use": m.uordblks, "free": m.fordblks, "mmapped": m.hblkhd, "arena": m.arena}


def pymalloc() -> dict[str, int]:
    """pymalloc's arenas (1 MiB each, mapped on their own): allocated now, and the bytes in them that
    hold objects, that are free in used pools, and in unused pools (``sys._debugmallocstats``)."""
    want = {"arenas allocated current": "arenas", "bytes in allocated blocks": "in_use",
            "bytes in available blocks": "free_blocks", "bytes in unused pools": "unused_pools"}
    with tempfile.TemporaryFile() as f:  # (it writes to fd 2: briefly pointed at a file)
        saved = os.dup(2)
        try:
            os.dup2(f.fileno(), 2)
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        f.seek(0)
        text = f.read().decode("ascii", "replace")
    out = {}
    for line in text.splitlines():
        name, _, value = line.lstrip("# ").partition("=")
        if "unused pools *" in name:  # "N unused pools * <pool size> bytes = B"
            name = "bytes in unused pools"
        if name.strip() in want:
            out[want[name.strip()]] = int(value.strip().replace(",", ""))
    return out


def held(stages: Iterable[Any]) -> list[tuple[str, int, int, int]]:
    """(what, entries, estimated bytes held, budget) for every stage part that remembers bodies."""
    out = []
    for stage in stages:
        for part in (stage, getattr(stage, "memo", None)):
            if part is None or not hasattr(part, "nbytes"):
                continue
            n = part.nbytes
            out.append((f"{getattr(stage, 'name', type(stage).__name__)}:{type(part).__name__}",
                        len(part), n() if callable(n) else n, int(getattr(part, "max_bytes", 0))))
    return out


def report(label: str, stages: Iterable[Any]) -> str:
    gc.collect()
    rss = next((line.split(":", 1)[1].strip() for line in Path("/proc/self/status").read_text().splitlines()
                if line.startswith("VmRSS:")), "?")
    lines = [f"# {label} at {time.strftime('%H:%M:%S')}", f"VmRSS: {rss}", f"heap: {heap()}",
             f"pymalloc: {pymalloc()}",
             f"gc counts: {gc.get_count()}, objects tracked: {len(gc.get_objects())}",
             f"threads: {sorted(t.name for t in threading.enumerate())}", "", "## held (what, entries, bytes, budget)"]
    lines += [f"{w}: {n} entries, {b / 1e6:.1f} MB of {cap / 1e6:.1f} MB" for w, n, b, cap in held(stages)]
    if tracemalloc.is_tracing():
        snap = tracemalloc.take_snapshot().filter_traces([tracemalloc.Filter(False, tracemalloc.__file__)])
        stats = snap.statistics("lineno")
        lines += ["", f"## tracemalloc: {sum(s.size for s in stats) / 1e6:.1f} MB traced; top sites"]
        lines += [f"{s.size / 1e6:8.2f} MB {s.count:8d} blocks  {s.traceback}" for s in stats[:TOP]]
        lines += ["", "## by traceback (top 10)"]
        for s in snap.statistics("traceback")[:10]:
            lines.append(f"{s.size / 1e6:8.2f} MB {s.count} blocks")
            lines += ["    " + line for line in s.traceback.format()[-12:]]
    return "\n".join(lines) + "\n"


def _watch(directory: Path, stages: list, stop: threading.Event) -> None:
    trigger = directory / "dump"
    while not stop.wait(0.2):
        try:
            label = trigger.read_text().strip() or "dump"
            trigger.unlink()
        except OSError:
            continue
        try:
            text = report(label, stages)
            (directory / f"{label}.tmp").write_text(text)
            os.replace(directory / f"{label}.tmp", directory / f"{label}.txt")
        except Exception:  # noqa: BLE001 - a diagnosis never takes the proxy down
            log.warning("memtrace: the dump %r failed", label, exc_info=True)


def install_from_env(stages: Iterable[Any]) -> threading.Event | None:
    """With ``SCALPEL_MEMTRACE`` set: trace allocations and watch for dump requests (setting the
    event returned stops the watching; the proxy never does). Without it: nothing, None."""
    where = os.environ.get(ENV)
    if not where:
        return None
    directory = Path(where)
    directory.mkdir(parents=True, exist_ok=True)
    frames = int(os.environ.get("SCALPEL_MEMTRACE_FRAMES", "12"))
    if frames > 0:
        tracemalloc.start(frames)
    stop = threading.Event()
    threading.Thread(target=_watch, args=(directory, list(stages), stop), name="scalpel-memtrace",
                     daemon=True).start()
    log.warning("memtrace: tracing allocations, dumps on %s", directory / "dump")
    return stop
