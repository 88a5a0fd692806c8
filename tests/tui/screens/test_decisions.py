"""tui/screens/decisions.py: the requests the pipeline changed, every cut, and the detail of the
highlighted one; ``a`` asks for the unchanged requests too.

The figures against the seeded ledger are in tests/tui/test_app.py; here the
view alone in a bare app, given ``DecisionsData`` built by hand.
"""

from __future__ import annotations

import pytest
from textual.widgets import DataTable

from scalpel_desktop.tui import format as fmt
from scalpel_desktop.tui.data import CutRow, DecisionRow, DecisionsData
from scalpel_desktop.tui.messages import ReloadRequested
from scalpel_desktop.tui.screens.decisions import KIND_WHY, DecisionsView, spill_cell
from tests.tui.helpers import host, row_keys, row_text, settle, text_of

pytestmark = pytest.mark.anyio
NOW = 1_800_000_000.0
SHA = "ab" + "c" * 62


def decision(i: int, **kw) -> DecisionRow:
    base = dict(id=i, ts=NOW - i * 60, session=f"session-{i:04d}-long", agent="", model="claude-opus-4-1-20250805",
                decision="cut", reason="superseded read of /p/a.py " + "x" * 60, tokens_removed=1_500,
                realized_tokens=1_200, realized_usd=0.01, status=200)
    return DecisionRow(**{**base, **kw})


def cut(tid: str, **kw) -> CutRow:
    base = dict(tool_use_id=tid, created_at=NOW - 30, session="session-0001-long", agent="", tool="Read",
                kind="superseded_read", tokens=2_345, sha256=SHA, spill_path="", spill_bytes=9_000)
    return CutRow(**{**base, **kw})


def test_the_spill_cell_says_where_the_original_is_and_when_it_is_gone():
    assert str(spill_cell(cut("t", spill_bytes=9_000))) == f"spill/ab/{SHA[:10]}… {fmt.size_bytes(9_000)}"
    gone = spill_cell(cut("t", spill_bytes=None))
    assert str(gone) == f"spill/ab/{SHA[:10]}… (gone)" and "strike" in str(gone.style)
    assert str(spill_cell(cut("t", sha256=""))) == "?"


async def test_the_requests_the_cuts_and_the_detail(isolated_home):
    spill = isolated_home / ".local" / "share" / "scalpel" / "data" / "spill" / "ab" / SHA
    cuts = [cut("toolu_1", spill_path=str(spill)), cut("toolu_2", tool="", kind="novel_kind", spill_bytes=None,
                                                       spill_path="")]
    data = DecisionsData(NOW, [decision(1), decision(2, decision="replayed", tokens_removed=0, realized_tokens=None,
                                                        status=None)],
                         cuts, counts={"unchanged": 50, "cut": 7, "replayed": 9})
    app = host(lambda: DecisionsView(id="decisions"))
    async with app.run_test(size=(80, 24)) as pilot:
        view = app.query_one("#decisions", DecisionsView)
        view.show(data)
        await settle(pilot)
        summary = text_of(app, "#decisions-summary")
        assert summary.startswith("Changed, refused or failed requests (a: all) · all time: ")
        assert summary.endswith("unchanged 50 · replayed 9 · cut 7")  # most first
        assert row_keys(app, "#decisions-table") == ["1", "2"]
        first = row_text(app, "#decisions-table", "1")
        assert first == [fmt.day_time(NOW - 60), "session-…", "opus-4-1", "cut", "1,500", "1,200", first[6]]
        assert len(first[6]) == 52 and first[6].endswith("…")
        assert row_text(app, "#decisions-table", "2")[4:6] == ["", ""]  # nothing removed, nothing realized yet
        assert row_keys(app, "#cuts-table") == ["toolu_1", "toolu_2"]
        assert row_text(app, "#cuts-table", "toolu_2")[2:4] == ["?", "novel_kind"]
        detail = text_of(app, "#cut-detail")
        assert detail.startswith("Cut toolu_1 of Read")
        assert KIND_WHY["superseded_read"] in detail and "2,345 tokens" in detail
        assert f"~/.local/share/scalpel/data/spill/ab/{SHA}" in detail and f"scalpel spill show {SHA[:12]}" in detail
        cuts_table = app.query_one("#cuts-table", DataTable)
        cuts_table.focus()
        await pilot.press("down")
        await settle(pilot)
        detail = text_of(app, "#cut-detail")
        assert "of an unrecorded tool" in detail and "Why novel_kind" in detail
        assert "Original ?" in detail and "(spill file gone)" in detail
        await pilot.press("shift+tab")  # regression: the detail stayed on the cut until the cursor moved
        await settle(pilot)
        requests = app.query_one("#decisions-table", DataTable)
        assert app.focused is requests and text_of(app, "#cut-detail").startswith("Request #1 at ")
        await pilot.press("tab")
        await settle(pilot)
        assert text_of(app, "#cut-detail").startswith("Cut toolu_2 of an unrecorded tool")
        requests.focus()
        await pilot.press("down")
        await settle(pilot)
        detail = text_of(app, "#cut-detail")
        assert detail.startswith("Request #2 at ") and "Decision replayed" in detail
        assert "realized" not in detail and "removed" not in detail and "status" not in detail
        await pilot.press("up")
        await settle(pilot)
        detail = text_of(app, "#cut-detail")
        assert "status 200" in detail and "removed 1,500 tokens (estimate)" in detail
        assert "realized 1,200 tokens ($0.01)" in detail
        # a refresh keeps each table's cursor; then an empty log
        view.show(data)
        await settle(pilot)
        assert requests.cursor_row == 0 and cuts_table.cursor_row == 1
        view.show(DecisionsData(NOW, counts={}))
        await settle(pilot)
        assert requests.row_count == 0 and cuts_table.row_count == 0
        assert text_of(app, "#cut-detail") == "No cuts recorded yet." and text_of(app, "#decisions-summary").endswith("none")
        view.show(DecisionsData(NOW, [decision(1)], counts={"cut": 1}, side_calls={"count_tokens": 12}))
        await settle(pilot)
        assert text_of(app, "#decisions-summary").endswith("cut 1 · count_tokens 12 (not requests)")
        view.show(DecisionsData(NOW, missing="no ledger at ~/x"))
        await settle(pilot)
        assert text_of(app, "#decisions-summary") == "Nothing to show yet: no ledger at ~/x."


async def test_a_asks_for_the_unchanged_requests_and_back():
    app = host(lambda: DecisionsView(id="decisions"))
    async with app.run_test(size=(80, 24)) as pilot:
        view = app.query_one("#decisions", DecisionsView)
        view.show(DecisionsData(NOW, [decision(1)], include_unchanged=False))
        app.query_one("#decisions-table", DataTable).focus()
        await pilot.press("a")
        await settle(pilot)
        assert view.include_unchanged is True
        assert app.posted == [ReloadRequested("decisions")]
        view.show(DecisionsData(NOW, [decision(1)], include_unchanged=True))
        await settle(pilot)
        assert text_of(app, "#decisions-summary").startswith("All requests (a: changed only) · all time: ")
        await pilot.press("a")
        await settle(pilot)
        assert view.include_unchanged is False and len(app.posted) == 2
