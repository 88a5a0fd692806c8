"""A hand-drawn vertical bar chart (one bar per day), labelled axes, highlighted ranges.

Textual's Sparkline has no axes and plotext is not a dependency, so this draws
bars of eighth-block characters on a text grid: a y-axis with the maximum, one
two-cell bar per point, day-of-month labels under every fifth bar and the last.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

VBLOCKS = " ▁▂▃▄▅▆▇█"


@dataclass(frozen=True)
class Bar:
    label: str  # printed under the bar (short: two cells)
    value: float
    style: str  # rich style of the bar


class BarChart(Widget):
    """Set ``bars`` (a sequence of ``Bar``) and ``value_format`` for the y-axis label."""

    DEFAULT_CSS = """
    BarChart { height: 12; }
    """
    bars: reactive[tuple[Bar, ...]] = reactive(tuple, layout=False)

    def __init__(self, value_format: Callable[[float], str] = lambda v: f"{v:,.0f}", *, bar_width: int = 2,
                 gap: int = 1, name: str | None = None, id: str | None = None, classes: str | None = None):
        super().__init__(name=name, id=id, classes=classes)
        self.value_format = value_format
        self.bar_width = bar_width
        self.gap = gap

    def set_bars(self, bars: Sequence[Bar]) -> None:
        self.bars = tuple(bars)

    def render(self) -> Text:
        return render_chart(self.bars, self.size.height, self.value_format, self.bar_width, self.gap,
                            width=self.size.width)


MAX_BAR_WIDTH = 6


def render_chart(bars: Sequence[Bar], height: int, value_format: Callable[[float], str],
                 bar_width: int = 2, gap: int = 1, width: int | None = None) -> Text:
    """``width``: the cells available; few bars are drawn wider (up to MAX_BAR_WIDTH) to fill it,
    so one day of data is a readable bar with its label, not a sliver at the edge."""
    rows = max(1, height - 2)
    top = max((b.value for b in bars), default=0.0)
    top_label = value_format(top) if top > 0 else value_format(0)
    gutter = max(len(top_label), len(value_format(0))) + 1
    if width and bars:
        room = width - gutter - 1
        fit = room // len(bars) - gap
        bar_width = max(bar_width, min(MAX_BAR_WIDTH, fit))
        if (bar_width + gap) * len(bars) > room:  # narrow terminal: thinner bars, then no gaps
            bar_width = 1
            gap = gap if (1 + gap) * len(bars) <= room else 0
    out = Text(no_wrap=True, overflow="crop")
    levels = [round(b.value / top * rows * 8) if top > 0 else 0 for b in bars]
    for r in range(rows):  # r = 0 is the top row
        floor = (rows - 1 - r) * 8  # eighths below this row
        label = top_label if r == 0 else (value_format(0) if r == rows - 1 else "")
        out.append(label.rjust(gutter - 1) + "│", style="dim")
        for b, level in zip(bars, levels):
            fill = max(0, min(8, level - floor))
            if b.value > 0 and fill == 0 and r == rows - 1:
                fill = 1  # a non-zero day is never invisible
            out.append(" " * gap)
            out.append(VBLOCKS[fill] * bar_width, style=b.style if fill else "")
        out.append("\n")
    out.append(" " * (gutter - 1) + "└" + "─" * ((bar_width + gap) * len(bars)) + "\n", style="dim")
    out.append(" " * gutter)
    cell = bar_width + gap
    labels = [" "] * (cell * len(bars) + 2)
    end = 0  # labels never overlap, and are never cut: one that does not fit is left out
    for i, b in enumerate(bars):
        if not (len(bars) <= 16 and cell >= len(b.label)) and not (i % 5 == 0 or i == len(bars) - 1):
            continue
        pos = i * cell + gap
        if pos < end or pos + len(b.label) > len(labels):
            continue
        labels[pos:pos + len(b.label)] = list(b.label)
        end = pos + len(b.label) + 1
    out.append("".join(labels).rstrip(), style="dim")
    return out
