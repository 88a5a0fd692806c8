"""tui/inventory.py: the Tools tab's data, read through the tools package's own readers.

Against the seeded ledger (tests/tui/seed.py, real writers), a ledger with no
tool tables, and one with the tables but nothing in them yet.
"""

from __future__ import annotations

import sqlite3

import pytest

from scalpel_desktop.paths import dirs
from scalpel_desktop.tui import data, inventory


@pytest.fixture
def conn(seeded):
    c = data.open_ledger(dirs().database)
    yield c
    c.close()


def test_tools_inventory_and_suggestions(seeded, conn):
    got = inventory.load_tools(conn, seeded.now, tool_filter=False)
    names = {t.name: t for t in got.tools}
    assert got.removals == seeded.removals
    assert names["mcp__linear__create_issue"].removal == "mcp__linear"
    assert names["Read"].removal is None and names["Read"].calls > 0
    assert names["mcp__linear__search_issues"].realized_tokens == sum(
        r[5] for r in seeded.filter_savings if r[4] == "mcp__linear__search_issues")
    suggested = {s.name: s for s in got.suggestions}
    assert "mcp__playwright" in suggested and "mcp__linear" not in suggested
    assert "Read" not in suggested and "TodoWrite" in suggested and suggested["TodoWrite"].needs_force
    assert suggested["mcp__playwright"].sessions == len(seeded.sessions)
    assert got.coverage_sessions == len(seeded.sessions)


def test_the_filter_state_is_passed_through_and_said_in_each_status(seeded, conn):
    off = inventory.load_tools(conn, seeded.now, tool_filter=False)
    on = inventory.load_tools(conn, seeded.now, tool_filter=True)
    assert (off.tool_filter, on.tool_filter, on.now) == (False, True, seeded.now)
    covered = {t.name: t for t in on.tools if t.removal}
    assert covered and all(t.status == f"removed by {t.removal}" for t in covered.values())
    assert all(t.status == f"removed by {t.removal} (filter off)" for t in off.tools if t.removal)
    assert [t.name for t in on.tools] == [t.name for t in off.tools]  # same inventory either way
    assert [t.tokens for t in on.tools] == sorted((t.tokens for t in on.tools), reverse=True)  # biggest first


def test_the_totals_are_the_sum_of_the_rows(seeded, conn):
    got = inventory.load_tools(conn, seeded.now, tool_filter=False)
    assert got.missing == "" and got.realized_tokens == sum(t.realized_tokens for t in got.tools) > 0
    assert got.realized_tokens == sum(r[5] for r in seeded.filter_savings)
    assert got.thresholds and got.coverage_days > 0


def test_a_ledger_without_tool_tables_says_so(isolated_home, tmp_path):
    path = tmp_path / "old.db"
    sqlite3.connect(path).execute("CREATE TABLE requests (id INTEGER PRIMARY KEY)").connection.close()
    conn = data.open_ledger(path)
    try:
        got = inventory.load_tools(conn, 1.0, tool_filter=True)
    finally:
        conn.close()
    assert got == inventory.ToolsData(1.0, True, missing="no tool inventory yet (the ledger has no tools tables)")


def test_an_empty_inventory_is_empty_not_missing(isolated_home):
    from scalpel_desktop.store.db import connect

    connect().close()  # every migration, no rows
    conn = data.open_ledger(dirs().database)
    try:
        got = inventory.load_tools(conn, 5.0, tool_filter=False)
    finally:
        conn.close()
    assert got.missing == "" and got.tools == [] and got.suggestions == [] and got.removals == ()
    assert (got.realized_tokens, got.coverage_sessions, got.withheld) == (0, 0, 0)
