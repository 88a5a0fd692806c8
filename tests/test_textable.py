"""Plain-text tables: fit the width by dropping and wrapping, never cut a cell; full width when piped."""

from __future__ import annotations

from scalpel_desktop.textable import RULE, Col, render, tokens_short, unique_prefixes, usd

SID = "f29d0da9-0fd6-493b-a95e-0cb1658cda14"
COLS = [Col("session"), Col("cost", right=True), Col("input", right=True, drop=2), Col("output", right=True, drop=1),
        Col("why", wrap=True)]
ROWS = [[SID, "$12.3456", "1.24M", "353k", "superseded read of a file that was read again much later on"], RULE,
        ["total", "$12.3456", "1.24M", "353k", ""]]


def test_piped_is_every_column_at_full_width():
    lines = render(COLS, ROWS, None)
    assert lines[0].split() == ["session", "cost", "input", "output", "why"]
    assert any(SID in ln and "superseded read of a file that was read again much later on" in ln for ln in lines)
    assert not any("not shown" in ln for ln in lines)


def test_narrow_terminal_drops_by_rank_then_wraps_and_never_cuts():
    lines = render(COLS, ROWS, 60)
    assert all(len(ln) <= 60 for ln in lines), lines
    note = " ".join(ln for ln in lines if ln.startswith(("(not shown", " ")))
    assert "not shown at 60 columns: input, output" in note  # the dropped columns are named, rank 2 first
    assert lines[0].split() == ["session", "cost", "why"]
    body = "\n".join(lines)
    assert SID in body and "$12.3456" in body and "…" not in body
    assert lines[2].endswith("superseded") and lines[7].strip() == "later on"  # the reason wraps


def test_a_long_id_stands_alone_above_its_figures_when_the_table_is_too_wide():
    cols = [Col("session", alone=True), Col("cost", right=True), Col("input", right=True, drop=2),
            Col("output", right=True, drop=1)]
    rows = [[SID, "$12.3456", "1.24M", "353k"], RULE, ["total", "$12.3456", "1.24M", "353k"]]
    assert render(cols, rows, None)[2].split() == [SID, "$12.3456", "1.24M", "353k"]  # piped: one line a row
    assert render(cols, rows, 80) == render(cols, rows, None)  # it fits: nothing moves
    lines = render(cols, rows, 36)
    assert all(len(ln) <= 36 for ln in lines), lines
    assert lines[0] == "session" and lines[1].split() == ["cost", "input", "output"]  # every figure kept
    assert lines[3] == SID and lines[4].split() == ["$12.3456", "1.24M", "353k"] and lines[4].startswith("  ")
    assert lines[6] == "total" and not any("not shown" in ln for ln in lines)
    narrow = render(cols, rows, 22)  # narrower still: then the ranks drop as ever (the id stays whole)
    assert narrow[3] == SID and narrow[1].split() == ["cost", "output"]
    assert "not shown at 22 columns: input;" in " ".join(" ".join(narrow).split())


def test_a_table_that_cannot_fit_is_printed_whole():
    lines = render([Col("id"), Col("n", right=True)], [[SID * 3, "1,234"]], 40)
    assert SID * 3 in lines[2] and lines[2].endswith("1,234")


def test_units_and_prefixes():
    assert [tokens_short(n) for n in (987, 12_345, 123_456, 1_234_567)] == ["987", "12.3k", "123k", "1.23M"]
    assert usd(0.01234) == "$0.0123" and usd(1234.5) == "$1,234.50"
    short = unique_prefixes(["abcdef1234", "abcdef9999"], ["abcdef1234", "abcdef9999", "ffff000000"], 4)
    assert short == {"abcdef1234": "abcdef1", "abcdef9999": "abcdef9"}
    assert unique_prefixes([SID], [SID], 8) == {SID: SID[:8]}
