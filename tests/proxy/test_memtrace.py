"""proxy/memtrace.py: the diagnosis switch is off unless asked for, and reports what stages hold."""

from __future__ import annotations

import time
import tracemalloc

from scalpel_desktop.pipeline.parse_reuse import ParseReuse
from scalpel_desktop.proxy import memtrace
from scalpel_desktop.surgery.memo import Memo, Snapshot
from scalpel_desktop.wire.layout import Layout


class _Stage:
    name = "surgery"

    def __init__(self):
        self.memo = Memo(size=8, max_bytes=1 << 30)
        self.memo.put("a", Snapshot(b"r" * 1_000, Layout([999], [998], [b"h"]), None, [0], [b"h"]))


def test_off_without_the_environment_variable(monkeypatch):
    monkeypatch.delenv(memtrace.ENV, raising=False)
    assert memtrace.install_from_env([]) is None


def test_held_lists_every_part_that_remembers_bodies_against_its_budget():
    stage, reuse = _Stage(), ParseReuse(max_bytes=5_000_000)
    rows = memtrace.held([reuse, stage, object()])
    assert rows == [("parse-reuse:ParseReuse", 0, 0, 5_000_000),
                    ("surgery:Memo", 1, stage.memo.nbytes, 1 << 30)]
    text = memtrace.report("x", [stage])
    assert "# x at" in text and "VmRSS:" in text and "surgery:Memo: 1 entries" in text


def test_a_dump_is_written_when_asked_for(monkeypatch, tmp_path):
    monkeypatch.setenv(memtrace.ENV, str(tmp_path / "trace"))
    was_tracing = tracemalloc.is_tracing()
    stop = memtrace.install_from_env([_Stage()])
    try:
        assert stop is not None and tracemalloc.is_tracing()
        (tmp_path / "trace" / "dump").write_text("request-500")
        want = tmp_path / "trace" / "request-500.txt"
        deadline = time.monotonic() + 30
        while not want.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        text = want.read_text()
        assert "surgery:Memo: 1 entries" in text and "## tracemalloc:" in text
        assert not (tmp_path / "trace" / "dump").exists()
    finally:
        if stop is not None:
            stop.set()
        if not was_tracing:
            tracemalloc.stop()


def test_pymalloc_figures_are_read_and_without_frames_nothing_is_traced(monkeypatch, tmp_path):
    figures = memtrace.pymalloc()
    assert figures["arenas"] >= 1 and figures["in_use"] > 0 and set(figures) == {
        "arenas", "in_use", "free_blocks", "unused_pools"}
    if tracemalloc.is_tracing():
        return  # another test left tracing on: the switch cannot be checked here
    monkeypatch.setenv(memtrace.ENV, str(tmp_path / "trace"))
    monkeypatch.setenv("SCALPEL_MEMTRACE_FRAMES", "0")
    stop = memtrace.install_from_env([_Stage()])
    try:
        assert stop is not None and not tracemalloc.is_tracing()
        text = memtrace.report("plain", [_Stage()])
        assert "pymalloc: {'arenas'" in text and "## tracemalloc" not in text
    finally:
        if stop is not None:
            stop.set()
