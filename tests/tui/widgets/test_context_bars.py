"""tui/widgets/context_bars.py: one session's context as bars, like Claude Code's ``/context``.

It draws a ``views_data.ContextBreakdown`` and reads nothing, so each test
builds one and reads the lines back: a row per region with its tokens and
share of the window, the dead part of the tool results, the free space, what
scalpel removed, and which figures are measured and which estimated.
"""

from __future__ import annotations

import pytest

from scalpel_desktop.tui import format as fmt
from scalpel_desktop.tui.views_data import REGION_LABELS, ContextBreakdown
from scalpel_desktop.tui.widgets.context_bars import BAR_W, LABEL_W, ContextBars, breakdown_text
from tests.tui.helpers import host, settle

REGIONS = tuple((k, label, t) for (k, label), t in zip(REGION_LABELS, (3_000, 12_000, 8_000, 40_000, 57_000)))
MEASURED = ContextBreakdown("s-1", "claude-sonnet-4-5", 200_000, 120_000, True, REGIONS, dead_left=21_000,
                            removed=4_500, cut_tokens=9_999, cuts=3)


def lines_of(ctx) -> list[str]:
    return breakdown_text(ctx).plain.split("\n")


def row(lines: list[str], label: str) -> str:
    found = [ln for ln in lines if ln.startswith(f"{label:<{LABEL_W}}")]
    assert len(found) == 1, (label, lines)
    return found[0]


def test_each_region_is_a_bar_of_the_window_with_its_tokens_and_share():
    lines = lines_of(MEASURED)
    assert lines[0] == "Context 120,000 of 200,000 · measured (usage)"
    for _, label, tokens in REGIONS:
        line = row(lines, label)
        share = tokens / 200_000
        assert line[LABEL_W:LABEL_W + BAR_W] == fmt.bar(share, BAR_W)
        assert line.split()[-2:] == [f"{tokens:,}", fmt.pct(share)]
    order = [next(i for i, ln in enumerate(lines) if ln.startswith(label)) for _, label, _ in REGIONS]
    assert order == sorted(order)  # in the breakdown's own order


def test_the_dead_part_follows_the_tool_results_and_free_space_is_the_rest_of_the_window():
    lines = lines_of(MEASURED)
    at = lines.index(row(lines, "Tool results"))
    assert lines[at + 1].startswith("  of which dead ") and lines[at + 1].split()[-2:] == ["21,000", "10%"]
    assert row(lines, "Free space").split()[-2:] == ["80,000", "40%"]
    removed = row(lines, "Removed")
    assert removed.endswith("4,500 tokens from this request by scalpel")
    assert lines[lines.index(removed) + 1].strip() == "3 cut(s), 9,999 tokens this session"
    assert lines[-1] == "split by region: estimate, scaled to the measured total"


def test_an_unknown_dead_part_says_so():
    lines = lines_of(ContextBreakdown("s", "m", 200_000, 1_000, True, REGIONS, dead_left=None))
    assert row(lines, "  of which dead").split()[-2:] == ["n/a", "—"]


def test_an_estimate_without_a_split_says_both():
    lines = lines_of(ContextBreakdown("s", "m", 200_000, 50_000, False))
    assert lines[0].endswith("· estimate (no usage)")
    assert "split not recorded for this request (older ledger rows)" in lines
    assert not any(ln.startswith(label) for _, label, _ in REGIONS for ln in lines)
    assert row(lines, "Free space").split()[-2:] == ["150,000", "75%"]


def test_an_unknown_total_shows_dashes_not_zeros():
    lines = lines_of(ContextBreakdown("s", "m", 200_000, None, False))
    assert lines[0].startswith("Context — of 200,000")
    free = row(lines, "Free space")
    assert free[LABEL_W:LABEL_W + BAR_W] == " " * BAR_W and free.split()[-2:] == ["—", "—"]


def test_a_full_window_has_no_free_space():
    lines = lines_of(ContextBreakdown("s", "m", 200_000, 230_000, True, REGIONS))
    assert row(lines, "Free space").split()[-2:] == ["0", "0%"]


def test_nothing_to_break_down():
    assert breakdown_text(None).plain == "No request of this session to break down."


PANE = 40  # #sessions-context in dashboard.tcss: 41 cells wide, one of padding


@pytest.mark.parametrize("dead_left", [21_000, None])
def test_every_bar_row_fits_the_pane_and_no_label_runs_into_its_bar(dead_left):
    """Regression: the dead row's label was LABEL_W + 1 cells, its bar glued to it ("dead··········")."""
    big = ContextBreakdown("s", "m", 1_000_000, 999_999, True, REGIONS, dead_left=dead_left)
    labels = {label for _, label, _ in REGIONS} | {"of which dead", "Free space"}
    bar_rows = [ln for ln in lines_of(big) if ln[:LABEL_W].strip() in labels]
    assert len(bar_rows) == len(REGIONS) + 2  # the regions, the dead part, the free space
    for ln in bar_rows:
        assert len(ln) <= PANE, ln
        assert ln[LABEL_W - 1] == " " and ln[:LABEL_W].strip(), ln  # a label, then a gap, then the bar


@pytest.mark.anyio
async def test_the_widget_shows_and_keeps_what_it_was_given():
    app = host(lambda: ContextBars(id="bars"))
    async with app.run_test(size=(80, 24)) as pilot:
        bars = app.query_one("#bars", ContextBars)
        bars.show(MEASURED)
        await settle(pilot)
        assert bars.ctx is MEASURED and str(bars.content) == breakdown_text(MEASURED).plain
        bars.show(None)
        await settle(pilot)
        assert bars.ctx is None and str(bars.content) == "No request of this session to break down."
