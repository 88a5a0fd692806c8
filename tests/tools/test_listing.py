"""tools/listing.py: what ``scalpel tools ls`` shows per name."""

from __future__ import annotations

import pytest

from scalpel_desktop.tools.listing import inventory_listing
from scalpel_desktop.tools.store import Declared, ToolStore


@pytest.fixture
def store(tmp_path):
    s = ToolStore.open(tmp_path / "ledger.sqlite3")
    yield s
    s.close()


def seed(store):
    store.save_inventory("s1", "claude-cli/2", "m", 1.0, [
        Declared("Read", "builtin", None, 300), Declared("mcp__gh__a", "mcp", "gh", 100),
        Declared("web_search", "server", None, 50),
    ], [("t1", "Read"), ("t2", "Read")], new_request=True)
    store.save_inventory("s2", "claude-cli/2", "m", 2.0, [Declared("mcp__gh__a", "mcp", "gh", 120)], [],
                         new_request=True)
    store.save_inventory("s3", "claude-cli/2", "m", 3.0, [], [], new_request=True)  # no declarations
    store.add_savings([(2.0, "s2", "claude", "m", "mcp__gh__a", 120, "cache_read", 0.5),
                       (2.0, "s2", "claude", "m", "Read", 30, "cache_read", None)])


def test_listing_aggregates_per_name_and_marks_what_a_removal_covers(store):
    seed(store)
    store.add_removal("mcp__gh", "cli", forced=False)
    out = inventory_listing(store, {"tool_filter": True})
    by = {t["name"]: t for t in out["tools"]}
    assert [t["name"] for t in out["tools"]] == ["Read", "mcp__gh__a", "web_search"]  # most tokens first
    assert by["mcp__gh__a"]["sessions"] == 2 and by["mcp__gh__a"]["tokens"] == 120 and by["mcp__gh__a"]["server"] == "gh"
    assert by["mcp__gh__a"]["status"] == "removed by mcp__gh" and by["mcp__gh__a"]["removal"] == "mcp__gh"
    assert by["Read"]["calls"] == 2 and by["Read"]["status"] == ""
    assert by["web_search"]["status"] == "kept"
    assert by["mcp__gh__a"]["realized"] == {"tokens": 120, "usd": 0.5}
    assert by["web_search"]["realized"] == {"tokens": 0, "usd": None}
    assert out["sessions"] == 2  # s3 declared nothing
    assert out["realized"]["tokens"] == 150 and out["realized"]["requests"] == 1
    assert [r["name"] for r in out["removals"]] == ["mcp__gh"]


def test_a_removal_with_the_filter_off_says_so(store):
    seed(store)
    store.add_removal("Read", "cli", forced=True)
    out = inventory_listing(store, {"tool_filter": False})
    assert out["tool_filter"] is False
    assert {t["name"]: t["status"] for t in out["tools"]}["Read"] == "removed by Read (filter off)"


def test_an_empty_inventory_lists_nothing(store):
    out = inventory_listing(store, {})
    assert out["tools"] == [] and out["sessions"] == 0 and out["realized"]["tokens"] == 0
