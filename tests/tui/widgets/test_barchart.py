"""tui/widgets/barchart.py: the hand-drawn bar chart fits its width, and its bars say the values.

Properties over random bars (hypothesis) for ``render_chart``; the widget in a
bare app at 80 columns for what actually reaches the screen.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scalpel_desktop.tui import format as fmt
from scalpel_desktop.tui.widgets.barchart import MAX_BAR_WIDTH, VBLOCKS, Bar, BarChart, render_chart
from tests.tui.helpers import host, settle

values = st.one_of(st.just(0.0), st.floats(0.0, 1e9, allow_nan=False), st.integers(0, 10**7).map(float))
bar_lists = st.lists(st.builds(Bar, st.from_regex(r"[0-9]{2}", fullmatch=True), values, st.just("")),
                     min_size=0, max_size=40)


def _gutter(bars, value_format=fmt.tokens_short) -> int:
    top = max((b.value for b in bars), default=0.0)
    return max(len(value_format(top) if top > 0 else value_format(0)), len(value_format(0))) + 1


def _columns(lines: list[str], gutter: int, n: int) -> list[str]:
    """Each bar's cells top to bottom, read back from the drawn rows (every cell of a bar is alike)."""
    cell = (len(lines[-2]) - gutter) // n if n else 0  # the axis line is gutter + cell * n long
    rows = lines[:-2]
    return ["".join(r[gutter + i * cell + cell - 1] if len(r) > gutter + i * cell + cell - 1 else " " for r in rows)
            for i in range(n)]


@settings(max_examples=150, deadline=None)
@given(bar_lists, st.integers(3, 20), st.integers(20, 200))
def test_the_chart_never_exceeds_its_width_and_has_its_height(bars, height, width):
    if len(bars) > width - _gutter(bars) - 1:
        return  # more bars than cells: nothing fits (the widget crops; see the narrow test)
    lines = render_chart(bars, height, fmt.tokens_short, width=width).plain.split("\n")
    assert len(lines) == height  # bar rows, the axis, the labels
    assert all(len(line) <= width for line in lines), (width, [len(line) for line in lines])


@settings(max_examples=150, deadline=None)
@given(st.lists(st.builds(Bar, st.just("01"), values, st.just("")), min_size=1, max_size=30), st.integers(4, 16),
       st.integers(60, 200))
def test_bars_are_as_tall_as_their_values_and_none_that_is_not_zero_is_invisible(bars, height, width):
    lines = render_chart(bars, height, fmt.tokens_short, width=width).plain.split("\n")
    gutter = _gutter(bars)
    rows = height - 2
    top = max(b.value for b in bars)
    for b, col in zip(bars, _columns(lines, gutter, len(bars))):
        eighths = sum(VBLOCKS.index(c) for c in col)
        if b.value == 0:
            assert col.strip() == ""
        else:
            assert eighths >= 1  # a non-zero day is never invisible
            assert abs(eighths - b.value / top * rows * 8) <= 1  # rounded to an eighth of a cell
        assert re.fullmatch(r" *[▁▂▃▄▅▆▇]?█*", col), col  # filled from the bottom up, no holes
        if b.value == top and top > 0:
            assert col[0] == "█"  # the tallest reaches the top row


def test_the_axis_says_the_top_value_and_zero():
    lines = render_chart([Bar("01", 500.0, ""), Bar("02", 72_918.0, "")], 6, fmt.tokens_short).plain.split("\n")
    assert lines[0].startswith("73k│") and lines[3].startswith("  0│") and lines[4].startswith("   └")
    empty = render_chart([], 5, fmt.tokens_short).plain.split("\n")
    assert len(empty) == 5 and empty[0] == "0│" and empty[3] == " └"


def test_few_bars_are_drawn_wider_to_fill_the_room_many_thinner():
    one = render_chart([Bar("30", 10.0, "")], 4, fmt.tokens_short, width=80).plain.split("\n")
    assert one[0].count("█") == MAX_BAR_WIDTH
    many = render_chart([Bar(f"{i:02d}", 10.0, "") for i in range(60)], 4, fmt.tokens_short, width=80).plain
    assert all(len(line) <= 80 for line in many.split("\n"))
    assert many.split("\n")[0].count("█") == 60  # one cell each, no room for gaps


def test_labels_never_overlap_and_are_never_cut():
    bars = [Bar(f"{i:02d}", float(i), "") for i in range(1, 31)]
    labels = render_chart(bars, 5, fmt.tokens_short, width=76).plain.split("\n")[-1].split()
    assert labels[-1] == "30" and all(len(x) == 2 for x in labels)  # the last day, and every label whole
    assert [int(x) for x in labels] == sorted(int(x) for x in labels)


def test_the_style_is_the_bars_own():
    text = render_chart([Bar("01", 5.0, "bold red"), Bar("02", 0.0, "green")], 4, fmt.tokens_short)
    styles = {str(span.style) for span in text.spans}
    assert "bold red" in styles and "green" not in styles  # an empty bar draws nothing, in no colour


@pytest.mark.anyio
async def test_the_widget_draws_its_bars_at_its_size():
    app = host(lambda: BarChart(fmt.tokens_short, id="chart"))
    bars = [Bar(f"{i:02d}", float(i * 1000), "") for i in range(1, 31)]
    async with app.run_test(size=(80, 24)) as pilot:
        chart = app.query_one("#chart", BarChart)
        assert chart.render().plain.split("\n")[0].endswith("│")  # no bars yet: an empty axis
        chart.set_bars(bars)
        await settle(pilot)
        assert chart.size.height == 12 and chart.size.width == 80
        drawn = chart.render().plain
        assert drawn == render_chart(bars, 12, fmt.tokens_short, width=80).plain
        assert all(len(line) <= 80 for line in drawn.split("\n")) and "30k" in drawn
