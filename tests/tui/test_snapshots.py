"""One snapshot per screen (pytest-textual-snapshot), on the seeded ledger with a frozen clock.

No proxy runs here, so every snapshot also shows the toggles disabled with the
reason. Update after an intended change with ``--snapshot-update`` and look at
the SVGs under tests/tui/__snapshots__/ before committing them.
"""

from __future__ import annotations

import pytest

from scalpel_desktop.tui.app import make_app
from tests.tui.helpers import PANES, settle
from tests.tui.seed import NOW

SIZE = (120, 40)


def _show(pane: str):
    async def run_before(pilot) -> None:
        await settle(pilot)
        await pilot.press(str(PANES.index(pane) + 1))
        await settle(pilot)
        await pilot.wait_for_scheduled_animations()  # the tab underline slides
        await settle(pilot)

    return run_before


@pytest.mark.parametrize("pane", PANES)
def test_screen(pane, seeded, snap_compare):
    app = make_app(clock=lambda: NOW)
    assert snap_compare(app, terminal_size=SIZE, run_before=_show(pane))
