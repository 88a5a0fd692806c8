"""Changing the removal list: the one place the CLI, tray, dashboard and control API go through.

Every change is recorded with its time and source. Removing a Claude Code
built-in needs ``force`` (``NeedsForce`` says what the model loses). Changes
apply to sessions that start afterwards; ``now=True`` also re-pins the sessions
already pinned (each of them then re-writes its whole prompt cache once).
"""

from __future__ import annotations

from typing import Any

from scalpel_desktop.errors import DataError
from scalpel_desktop.tools import names as tn
from scalpel_desktop.tools.store import ToolStore


class RemovalError(DataError):
    """A bad removal request (bad name, ...): the message says what to do."""

    title = "Tool removal refused"


class NeedsForce(RemovalError):
    def __init__(self, name: str, loses: str):
        self.name, self.loses = name, loses
        super().__init__(
            f"{name} is a Claude Code built-in; without it the model loses {loses}. "
            f"Pass force (--force) to remove it anyway."
        )


def builtin_loss(store: ToolStore, name: str) -> str | None:
    """What the model loses without built-in ``name``; None when it is not a built-in."""
    if name.startswith((tn.MCP_PREFIX, tn.SKILL_PREFIX)):
        return None
    rows = store.query(
        "SELECT summary FROM tool_declarations WHERE name = ? AND kind IN ('builtin','deferred') "
        "ORDER BY last_seen DESC LIMIT 1", (name,))
    known = tn.KNOWN_BUILTINS.get(name)
    if known:
        return known + (f' ("{rows[0][0]}")' if rows and rows[0][0] else "")
    if rows:
        kind_rows = store.query("SELECT 1 FROM tool_declarations WHERE name = ? AND kind = 'builtin' LIMIT 1", (name,))
        if kind_rows:
            return f'"{rows[0][0]}"' if rows[0][0] else "this tool"
    return None


def remove(store: ToolStore, name: str, *, source: str, force: bool = False, now: bool = False) -> dict[str, Any]:
    name = (name or "").strip()
    if not tn.valid_removal_name(name):
        raise RemovalError(f"{name!r} is not a tool name (use a declared name, mcp__<server>, or skill__<name>)")
    loss = builtin_loss(store, name)
    if loss is not None and not force:
        raise NeedsForce(name, loss)
    added = store.add_removal(name, source, forced=loss is not None)
    result: dict[str, Any] = {"name": name, "changed": added, "builtin": loss is not None, "loses": loss}
    if now:
        result["repinned"] = repin_all(store, source)
    return result


def restore(store: ToolStore, name: str, *, source: str, now: bool = False) -> dict[str, Any]:
    name = (name or "").strip()
    dropped = store.drop_removal(name, source)
    result: dict[str, Any] = {"name": name, "changed": dropped}
    if not dropped:
        result["note"] = f"{name} was not on the removal list"
    if now:
        result["repinned"] = repin_all(store, source)
    return result


def repin_all(store: ToolStore, source: str) -> int:
    return store.repin(store.pinned_sessions(), store.removals().keys(), source)


def set_enabled(store: ToolStore, config: Any, on: bool, *, source: str, save: bool = True) -> dict[str, Any]:
    """Turn the filter on/off for new sessions: the ``tool_filter`` setting, recorded in the history."""
    was = bool(config.get("tool_filter"))
    config.set("tool_filter", bool(on))
    if save:
        config.save()
    if was != bool(on):
        store.record("on" if on else "off", "", source)
    return {"tool_filter": bool(on), "changed": was != bool(on)}
