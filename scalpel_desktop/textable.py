"""Plain-text tables that fit the terminal without cutting an id, a number or a sum.

Every CLI table (``report``, ``log``, ``tools ls``, ``spill ls``, ``bench``, ...)
goes through ``render``. The rules (docs/cli-tables.md repeats them):

* a cell is never cut and never gets an ellipsis: ids, figures and sums of
  money are printed whole;
* on a terminal narrower than the table, a column marked ``alone`` (a long
  id: the session of ``report --by session``) first moves to a line of its
  own above the rest of its row, which then has the terminal's whole width;
  then the columns with the highest ``drop`` rank go (0 = never dropped),
  then the columns marked ``wrap`` (free text: reasons, paths) wrap onto more
  lines; a table that still does not fit is printed whole (an id is never
  cut) and says so;
* piped output (``width=None``) is every column at its natural width: plain
  text, no box drawing, no colour, no forced width.

A dropped column is named under the table, so a reader knows to widen the
terminal, pipe the output, or ask for ``--json``.
"""

from __future__ import annotations

import os
import shutil
import sys
import textwrap
from dataclasses import dataclass
from typing import Sequence

GAP = 2
MIN_WRAP = 12
UNDER = 2  # how far a row's other cells sit in under its ``alone`` cells


@dataclass(frozen=True)
class Col:
    title: str
    right: bool = False  # right-aligned (figures)
    drop: int = 0  # 0: always shown; higher ranks are dropped first when the terminal is narrow
    wrap: bool = False  # free text that may wrap onto more lines (never an id or a figure)
    alone: bool = False  # a long id that may stand on a line of its own, above the row's other cells


RULE = None  # a row that is RULE prints a separator line (before a total)


def terminal_width(stream=None) -> int | None:
    """The terminal's width when ``stream`` (stdout) is a terminal, else None (piped: full width).
    ``COLUMNS`` wins when set, as rich and ``shutil`` read it."""
    stream = stream or sys.stdout
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        tty = False
    if not tty:
        return None
    env = os.environ.get("COLUMNS", "")
    if env.isdigit() and int(env) > 0:
        return int(env)
    return shutil.get_terminal_size((80, 24)).columns


def render(cols: Sequence[Col], rows: Sequence[Sequence[str] | None], width: int | None = None,
           indent: int = 0) -> list[str]:
    """The table's lines. ``width``: the terminal's columns, or None for full width (piped)."""
    cells = [[str(c) for c in r] if r is not RULE else None for r in rows]
    natural = [max([len(c.title)] + [len(r[i]) for r in cells if r is not None]) for i, c in enumerate(cols)]
    shown = list(range(len(cols)))
    widths = list(natural)
    alone: list[int] = []
    inner = indent  # where the row's (other) cells start

    def total(idx: list[int]) -> int:
        return inner + sum(widths[i] for i in idx) + GAP * max(0, len(idx) - 1)

    dropped: list[str] = []
    if width is not None and total(shown) > width and any(c.alone for c in cols):
        alone = [i for i in shown if cols[i].alone]
        shown = [i for i in shown if not cols[i].alone]
        inner = indent + UNDER
    if width is not None:
        for rank in sorted({c.drop for c in cols if c.drop > 0}, reverse=True):
            if total(shown) <= width:
                break
            for i in [i for i in shown if cols[i].drop == rank][::-1]:
                if total(shown) <= width:
                    break
                shown.remove(i)
                dropped.append(cols[i].title)
        over = total(shown) - width
        wrappable = [i for i in shown if cols[i].wrap]
        for i in wrappable:
            if over <= 0:
                break
            new = max(MIN_WRAP, min(natural[i], widths[i] - over), len(cols[i].title))
            over -= widths[i] - new
            widths[i] = new
    rule = " " * indent + "-" * (total(shown) - indent)
    lines = [_line(cols, alone, widths, [c.title for c in cols], indent)] if alone else []
    lines.append(_line(cols, shown, widths, [c.title for c in cols], inner))
    lines.append(rule)
    for r in cells:
        if r is RULE:
            lines.append(rule)
            continue
        if alone:
            lines.append(_line(cols, alone, widths, r, indent))
        wrapped = {i: (textwrap.wrap(r[i], widths[i], break_on_hyphens=False, break_long_words=True) or [""])
                   if cols[i].wrap and len(r[i]) > widths[i] else [r[i]] for i in shown}
        height = max(len(v) for v in wrapped.values()) if wrapped else 1
        for k in range(height):
            lines.append(_line(cols, shown, widths, _pick(wrapped, k, len(cols)), inner))
    if dropped:
        note = (f"(not shown at {width} columns: {', '.join(dropped)}; "
                "pipe the output or use --json for every column)")
        lines += [" " * indent + ln for ln in textwrap.wrap(note, max(20, (width or 80) - indent),
                                                             subsequent_indent=" ")]
    return lines


def _pick(wrapped: dict[int, list[str]], k: int, n: int) -> list[str]:
    return [wrapped[i][k] if i in wrapped and k < len(wrapped[i]) else "" for i in range(n)]


def _line(cols: Sequence[Col], shown: list[int], widths: list[int], values: Sequence[str], indent: int) -> str:
    parts = []
    for i in shown:
        v = values[i]
        parts.append(v.rjust(widths[i]) if cols[i].right else v.ljust(widths[i]))
    return (" " * indent + (" " * GAP).join(parts)).rstrip()


def print_table(cols: Sequence[Col], rows: Sequence[Sequence[str] | None], width: int | None = None, *,
                indent: int = 0, file=None) -> None:
    """``render`` to ``file`` (stdout); ``width`` defaults to the terminal's (None when piped)."""
    file = file or sys.stdout
    if width is None:
        width = terminal_width(file)
    for line in render(cols, rows, width, indent):
        print(line, file=file)


def tokens_short(n: int | float | None) -> str:
    """Token counts in narrow columns: 987, 12.3k, 123k, 1.23M (k = thousand, M = million)."""
    if n is None:
        return "-"
    n = int(n)
    a = abs(n)
    if a >= 1_000_000:
        return f"{n / 1e6:.2f}M"
    if a >= 100_000:
        return f"{n / 1e3:.0f}k"
    if a >= 1000:
        return f"{n / 1e3:.1f}k"
    return str(n)


def usd(x: float | None) -> str:
    """Dollars: $1,234.56 from a dollar up, $0.0123 below (four decimals: a cent is visible)."""
    if x is None:
        return "-"
    return f"${x:,.2f}" if abs(x) >= 1 else f"${x:.4f}"


def say(text: str, width: int | None = None, *, indent: int = 0, file=None) -> None:
    """Print prose wrapped to the terminal (``width`` defaults to it; piped: one line as is)."""
    file = file or sys.stdout
    if width is None:
        width = terminal_width(file)
    if width is None or len(text) + indent <= width:
        print(" " * indent + text, file=file)
        return
    for line in textwrap.wrap(text, max(20, width - indent), break_on_hyphens=False, break_long_words=True,
                              subsequent_indent="  "):
        print(" " * indent + line, file=file)


def unique_prefixes(shown: Sequence[str], among: Sequence[str] | set[str], min_len: int = 8) -> dict[str, str]:
    """id -> its shortest prefix of at least ``min_len`` characters that no other id in ``among``
    (plus ``shown``) shares: what a table prints so it can be pasted back as a unique prefix."""
    pool = sorted(set(among) | set(shown))
    out: dict[str, str] = {}
    for i in set(shown):
        n = min_len
        for other in pool:
            if other == i:
                continue
            common = 0
            for a, b in zip(i, other):
                if a != b:
                    break
                common += 1
            n = max(n, common + 1)
        out[i] = i[:n] if n < len(i) else i
    return out
