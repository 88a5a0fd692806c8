"""One snapshot per screen and terminal size (pytest-textual-snapshot), on the seeded ledger with a
frozen clock.

Three sizes: 80x24 (the smallest terminal people use), 100x30 and 120x40. At
each, every table keeps all its columns (wider ones scroll sideways) and shows
rows (taller ones scroll). No proxy runs here, so every snapshot also shows the
toggles disabled with the reason. Update after an intended change with
``--snapshot-update`` and look at the SVGs under tests/tui/__snapshots__/
before committing them (``tests/tui/test_screenshots.py`` turns them into PNGs).
"""

from __future__ import annotations

import pytest

from scalpel_desktop.tui.app import make_app
from textual.widgets import DataTable

from tests.tui.helpers import open_tab, PANES, settle, wait_until
from tests.tui.seed import NOW

SIZES = ((80, 24), (100, 30), (120, 40))


def show(pane: str):
    async def run_before(pilot) -> None:
        await settle(pilot)
        await open_tab(pilot, pane)
        await pilot.wait_for_scheduled_animations()  # the tab underline slides
        await settle(pilot)
        # Every table of the tab has its rows, and a refresh has sized its columns to them.
        tables = list(pilot.app.query_one(f"#{pane}-view").query(DataTable))
        await wait_until(pilot, lambda: all(t.row_count > 0 for t in tables))
        for t in tables:
            t.refresh(layout=True)
        await settle(pilot)
        await pilot.pause(0.2)

    return run_before


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("pane", PANES)
def test_screen(pane, size, seeded, snap_compare):
    app = make_app(clock=lambda: NOW)
    assert snap_compare(app, terminal_size=size, run_before=show(pane))
