"""The real ``scalpel tui`` in tmux at 80x24, 100x30 and 120x40: tables show rows, wide ones scroll.

tmux runs the dashboard as a user would (``new-session -d -x W -y H``,
``capture-pane -p``) on the seeded ledger, its clock moved to the seed's
``NOW`` through the test clock file. At each size the sessions table shows its
header and every listed session with its savings column (120x40 once hid
it); the decisions tab shows rows of both its tables and the highlighted cut's
detail (80x24 once showed none); the tools tab shows at least 8 inventory rows
(100x30 once showed 4 of 25). A Pilot run at the same sizes checks that a
table wider than the screen scrolls sideways to its last column instead of
cutting it.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
import uuid

import re

import pytest
from textual.widgets import DataTable

from scalpel_desktop import clock
from scalpel_desktop.tui.app import make_app
from tests.support import REPO, require
from tests.tui.conftest import frozen
from scalpel_desktop.tui import format as fmt
from tests.tui.helpers import (
    PANES, expected_misses, expected_session, listed_sessions, open_tab, session_miss_cost, settle,
)
from tests.tui.seed import NOW

SIZES = ((80, 24), (100, 30), (120, 40))
DECISION_ROW = re.compile(r"^\s*\d\d-\d\d \d\d:\d\d\s")  # a table row starts with its day and time
ENV_KEYS = ("HOME", "SCALPEL_HOME", "CLAUDE_CONFIG_DIR", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME",
            "XDG_CACHE_HOME", "XDG_RUNTIME_DIR", "TZ", "PATH", "SCALPEL_TEST_CLOCK_FILE")


class Tmux:
    def __init__(self, width: int, height: int, command: str):
        self.sock = f"scalpel-test-{uuid.uuid4().hex[:8]}"
        self.run("new-session", "-d", "-s", "t", "-x", str(width), "-y", str(height), command)

    def run(self, *args: str) -> str:
        return subprocess.run(["tmux", "-L", self.sock, "-f", "/dev/null", *args], capture_output=True, text=True,
                              timeout=30, check=True).stdout

    def screen(self) -> str:
        return self.run("capture-pane", "-t", "t", "-p")

    def wait_for(self, text: str, timeout_s: float = 60.0, ready=lambda shown: True) -> str:
        """The screen once ``text`` is on it, ``ready(screen)`` holds and two captures in a row agree
        (rendering settled: a loaded machine can show a table a moment before its columns are sized)."""
        deadline = time.monotonic() + timeout_s
        last = None
        while time.monotonic() < deadline:
            shown = self.screen()
            if text in shown and shown == last and ready(shown):
                return shown
            last = shown
            time.sleep(0.5)
        raise AssertionError(f"{text!r} never appeared:\n{self.screen()}")

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.sock, "kill-server"], capture_output=True, timeout=30)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_real_dashboard_in_tmux(size, seeded, tmp_path, monkeypatch):
    require(shutil.which("tmux") is not None, "tmux")
    clock_file = tmp_path / "clock"
    clock.set_offset(clock_file, NOW - time.time())
    monkeypatch.setenv("SCALPEL_TEST_CLOCK_FILE", str(clock_file))
    env = " ".join(f"{k}={shlex.quote(os.environ[k])}" for k in ENV_KEYS if k in os.environ)
    cmd = f"cd {shlex.quote(str(REPO))} && env {env} {shlex.quote(sys.executable)} -m scalpel_desktop tui"
    width, height = size
    tmux = Tmux(width, height, cmd)
    try:
        shown = tmux.wait_for("session(s) seen")
        lines = shown.splitlines()
        assert len(lines) <= height and all(len(ln) <= width for ln in lines)
        assert "Project" in shown and "Session" in shown and "Cost" in shown
        listed = listed_sessions(seeded)
        assert all(s[:8] in shown for s in listed), shown
        # the savings column is on screen, with each session's figure on its row (120x40 once hid it)
        header = next(ln for ln in lines if "Session" in ln and "Cost" in ln)
        assert "Saved" in header, shown
        assert "Misses" in header.split(), shown  # whole, right of the saving (80x24 once cut it to "Mi")
        for s in listed:
            row = next(ln for ln in lines if s[:8] in ln)
            assert fmt.tokens(expected_session(seeded, s)["realized"]) in row.split(), row
            n, miss_usd = session_miss_cost(seeded, s)
            assert (fmt.usd(miss_usd) if n else "—") in row.split(), row
        tmux.run("send-keys", "-t", "t", str(PANES.index("decisions") + 1))

        def decision_rows(shown: str) -> tuple[int, int]:
            """Rows on screen of the requests table and of the cuts table (80x24 once showed none)."""
            at = shown.splitlines()
            cuts = next(i for i, ln in enumerate(at) if ln.lstrip().startswith("Cuts (surgery log)"))
            rows = [bool(DECISION_ROW.match(ln)) for ln in at]
            return sum(rows[:cuts]), sum(rows[cuts:])

        shown = tmux.wait_for("Cuts (surgery log)", ready=lambda shown: min(decision_rows(shown)) >= 2)
        assert all(len(ln) <= width for ln in shown.splitlines())
        assert "scalpel spill show" in " ".join(shown.split())  # the highlighted cut's command (it may wrap)
        tmux.run("send-keys", "-t", "t", str(PANES.index("tools") + 1))
        def tool_rows(shown: str) -> list[str]:
            return [ln for ln in shown.splitlines() if "[ ] keep" in ln or "[x] remove" in ln]

        shown = tmux.wait_for("Inventory 17 names", ready=lambda shown: len(tool_rows(shown)) >= 8)
        assert len(tool_rows(shown)) >= 8, shown
        tmux.run("send-keys", "-t", "t", str(PANES.index("usage") + 1))
        shown = tmux.wait_for("Cost per day")
        assert "Active block" in shown or "No active 5-hour block" in shown
        tmux.run("send-keys", "-t", "t", str(PANES.index("misses") + 1))
        shown = tmux.wait_for("By session (")
        assert all(len(ln) <= width for ln in shown.splitlines())
        want = expected_misses(seeded, 7)
        for cause, (count, tokens, cost) in want["by_cause"].items():  # every cause on screen, whole
            row = next(ln for ln in shown.splitlines() if ln.split()[:1] == [cause])
            assert row.split()[1:4] == [f"{count:,}", fmt.tokens(tokens), fmt.usd(cost)], row
        top = max(want["by_session"], key=lambda s: want["by_session"][s][1])
        assert top[:8] in shown and fmt.usd(want["by_session"][top][1]) in shown
        tmux.run("send-keys", "-t", "t", "q")
    finally:
        tmux.close()


@pytest.mark.anyio
@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
async def test_wide_tables_scroll_to_their_last_column(size, seeded):
    app = make_app(clock=frozen)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        for pane, table_id in (("sessions", "#sessions-table"), ("tools", "#tools-table"),
                               ("decisions", "#decisions-table"), ("usage", "#usage-daily"),
                               ("misses", "#misses-sessions")):
            await open_tab(pilot, pane)
            table = app.query_one(table_id, DataTable)
            assert table.row_count > 0
            content = sum(c.get_render_width(table) for c in table.columns.values())
            if content > table.scrollable_content_region.width:
                assert table.max_scroll_x > 0  # scrolls sideways: no column is cut off for good
                table.scroll_to(x=table.max_scroll_x, animate=False)
                await pilot.pause()
                assert table.scroll_x + table.scrollable_content_region.width >= content - 1
