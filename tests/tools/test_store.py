"""tools/store.py: the removal list with its history, session pins, inventory upserts."""

from __future__ import annotations

import pytest

from scalpel_desktop.tools.store import Declared, ToolStore


@pytest.fixture
def store(tmp_path):
    s = ToolStore.open(tmp_path / "ledger.sqlite3")
    yield s
    s.close()


def test_add_and_drop_removal_are_recorded_once_each(store):
    assert store.add_removal("mcp__github", "cli", forced=False, now=10.0)
    assert not store.add_removal("mcp__github", "tray", forced=False, now=11.0)  # already there
    assert store.add_removal("Workflow", "dashboard", forced=True, now=12.0)
    assert list(store.removals()) == ["Workflow", "mcp__github"]
    assert store.removals()["Workflow"] == {"name": "Workflow", "added_at": 12.0, "source": "dashboard", "forced": True}
    assert store.drop_removal("mcp__github", "control_api", now=13.0)
    assert not store.drop_removal("mcp__github", "control_api", now=14.0)
    hist = store.history()
    assert [(h["action"], h["name"], h["source"], h["detail"]) for h in hist] == [
        ("remove", "mcp__github", "cli", ""), ("remove", "Workflow", "dashboard", "forced"),
        ("restore", "mcp__github", "control_api", ""),
    ]
    assert [h["name"] for h in store.history(limit=1)] == ["mcp__github"]


def test_an_unknown_source_is_refused_and_writes_nothing(store):
    with pytest.raises(ValueError, match="source 'web' is not one of cli, tray"):
        store.add_removal("X", "web", forced=False)
    assert store.removals() == {} and store.history() == []


def test_a_pin_is_created_once_and_then_kept(store):
    first = store.create_pin("s1", True, ["b", "a", "a"], now=5.0)
    assert first.names == frozenset({"a", "b"}) and first.enabled and first.pinned_at == 5.0
    again = store.create_pin("s1", False, ["z"], now=6.0)
    assert again == first
    assert store.get_pin("nope") is None


def test_repin_replaces_the_names_of_existing_sessions_only(store):
    store.create_pin("s1", False, [], now=1.0)
    store.create_pin("s2", True, ["a"], now=2.0)
    assert store.pinned_sessions() == ["s1", "s2"]
    assert store.pinned_sessions(since=1.5) == ["s2"]
    assert store.repin(["s1", "s2", "ghost"], ["x"], "cli") == 2
    assert store.get_pin("s1").names == frozenset({"x"}) and store.get_pin("s1").enabled
    assert store.history()[-1]["action"] == "repin" and store.history()[-1]["detail"] == "2 session(s)"


def rows(store, sql):
    return [tuple(r) for r in store.query(sql)]


def test_save_inventory_upserts_sessions_declarations_and_calls(store):
    d = [Declared("Read", "builtin", None, 100, "Reads a file."), Declared("mcp__gh__x", "mcp", "gh", 50)]
    store.save_inventory("s", "claude-cli/2", "opus", 1.0, d, [("tu1", "Read")], new_request=True)
    store.save_inventory("s", "claude-cli/2", "", 3.0, [Declared("Read", "builtin", None, 120)],
                         [("tu1", "Read"), ("tu2", "Read")], new_request=True)
    store.save_inventory("s", "claude-cli/2", "", 2.0, None, [], new_request=False)
    assert rows(store, "SELECT model, first_seen, last_seen, requests FROM tool_sessions") == [("opus", 1.0, 3.0, 2)]
    assert rows(store, "SELECT name, tokens, last_seen FROM tool_declarations ORDER BY name") == [
        ("Read", 120, 3.0), ("mcp__gh__x", 50, 1.0)]
    assert rows(store, "SELECT COUNT(*) FROM tool_calls") == [(2,)]


def test_open_twice_on_one_file_sees_the_same_data(tmp_path):
    a = ToolStore.open(tmp_path / "l.sqlite3")
    a.add_removal("X", "cli", forced=False)
    b = ToolStore.open(tmp_path / "l.sqlite3")
    assert list(b.removals()) == ["X"]
    a.close()
    b.close()
