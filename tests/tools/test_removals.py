"""tools/removals.py: the one way to change the removal list (built-ins need force)."""

from __future__ import annotations

import pytest

from scalpel_desktop.tools import removals
from scalpel_desktop.tools.store import Declared, ToolStore


@pytest.fixture
def store(tmp_path):
    s = ToolStore.open(tmp_path / "ledger.sqlite3")
    yield s
    s.close()


def test_removing_a_known_builtin_needs_force_and_says_what_is_lost(store):
    with pytest.raises(removals.NeedsForce, match="Workflow is a Claude Code built-in; .*multi-step workflow") as e:
        removals.remove(store, "Workflow", source="cli")
    assert e.value.name == "Workflow"
    assert store.removals() == {}
    res = removals.remove(store, " Workflow ", source="cli", force=True)
    assert res == {"name": "Workflow", "changed": True, "builtin": True, "loses": "running multi-step workflow scripts"}
    assert store.removals()["Workflow"]["forced"]


def test_a_builtin_seen_in_the_inventory_is_named_by_its_own_summary(store):
    store.save_inventory("s", "claude-cli/2", "m", 1.0, [Declared("NewTool", "builtin", None, 10, "Does new things.")],
                         [], new_request=True)
    assert removals.builtin_loss(store, "NewTool") == '"Does new things."'
    assert removals.builtin_loss(store, "Read").startswith("reading files")
    assert removals.builtin_loss(store, "mcp__gh") is None
    assert removals.builtin_loss(store, "client_tool") is None


def test_mcp_servers_and_skills_need_no_force(store):
    assert removals.remove(store, "mcp__github", source="tray")["builtin"] is False
    assert removals.remove(store, "skill__review", source="tray")["changed"] is True
    assert removals.remove(store, "mcp__github", source="tray")["changed"] is False


def test_a_bad_name_is_refused_with_what_to_use(store):
    with pytest.raises(removals.RemovalError, match="use a declared name, mcp__<server>, or skill__<name>"):
        removals.remove(store, "no spaces please", source="cli")


def test_restore_says_when_the_name_was_not_listed(store):
    removals.remove(store, "mcp__github", source="cli")
    assert removals.restore(store, "mcp__github", source="cli") == {"name": "mcp__github", "changed": True}
    res = removals.restore(store, "mcp__github", source="cli")
    assert res["changed"] is False and res["note"] == "mcp__github was not on the removal list"


def test_now_repins_every_pinned_session(store):
    store.create_pin("s1", False, [])
    store.create_pin("s2", True, ["old"])
    res = removals.remove(store, "mcp__github", source="cli", now=True)
    assert res["repinned"] == 2
    assert store.get_pin("s1").names == frozenset({"mcp__github"})
    assert removals.restore(store, "mcp__github", source="cli", now=True)["repinned"] == 2
    assert store.get_pin("s2").names == frozenset()


class FakeConfig(dict):
    saved = 0

    def set(self, k, v):
        self[k] = v

    def save(self):
        self.saved += 1


def test_set_enabled_records_only_a_change(store):
    cfg = FakeConfig(tool_filter=False)
    assert removals.set_enabled(store, cfg, True, source="cli") == {"tool_filter": True, "changed": True}
    assert removals.set_enabled(store, cfg, True, source="cli", save=False) == {"tool_filter": True, "changed": False}
    assert cfg.saved == 1 and cfg["tool_filter"] is True
    assert [h["action"] for h in store.history()] == ["on"]


@pytest.fixture
def seen_store(isolated_home):
    s = ToolStore.open()
    s.save_inventory("s1", "claude-cli/2.1.332", "claude-sonnet-4-5", 1_790_000_000.0,
                     [Declared("mcp__github__create_issue", "mcp", "github", 300),
                      Declared("skill__code-review", "skill", None, 40),
                      Declared("Bash", "builtin", None, 900)], [], new_request=True)
    yield s
    s.close()


def test_seen_names(seen_store):
    assert removals.seen(seen_store, "mcp__github")  # a server: one of its tools was declared
    assert removals.seen(seen_store, "mcp__github__create_issue")
    assert removals.seen(seen_store, "skill__code-review") and removals.seen(seen_store, "Bash")
    assert removals.seen(seen_store, "Workflow")  # a known Claude Code built-in, even before a capture
    assert not removals.seen(seen_store, "mcp__githb") and not removals.seen(seen_store, "mcp__git")
    assert not removals.seen(seen_store, "skill__nope") and not removals.seen(seen_store, "Bsh")


def test_require_seen_refuses_unless_forced(seen_store):
    with pytest.raises(removals.NeverSeen, match="mcp__githb is not in the tool inventory"):
        removals.remove(seen_store, "mcp__githb", source="cli", require_seen=True)
    assert "mcp__githb" not in seen_store.removals()
    assert removals.remove(seen_store, "mcp__githb", source="cli", require_seen=True, force=True)["changed"]
    # the control API and the tray keep accepting any valid name (they offer names from the inventory)
    assert removals.remove(seen_store, "mcp__other", source="tray")["changed"]
