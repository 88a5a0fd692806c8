"""Changing the removal list: the one place the CLI, tray, dashboard and control API go through.

Every change is recorded with its time and source. Removing a Claude Code
built-in needs ``force`` (``NeedsForce`` says what the model loses); so does,
from the CLI, a name no captured session ever declared (``NeverSeen``: a typo
like ``mcp__githb`` would otherwise do nothing forever). Changes
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


class NeverSeen(RemovalError):
    def __init__(self, name: str):
        self.name = name
        super().__init__(
            f"{name} is not in the tool inventory: no captured session declared it, so removing it would "
            f"change nothing (a typo?). `scalpel tools ls` lists what sessions declare; pass --force to "
            f"add it anyway (e.g. a tool you have not used through scalpel yet)."
        )


def seen(store: ToolStore, name: str) -> bool:
    """Has any captured session declared ``name`` (for mcp__<server>: one of its tools), or is it a known built-in?"""
    if name in tn.KNOWN_BUILTINS:
        return True
    if store.query("SELECT 1 FROM tool_declarations WHERE name = ? LIMIT 1", (name,)):
        return True
    if name.startswith(tn.MCP_PREFIX) and tn.mcp_server(name) is None:
        prefix = name + "__"
        return bool(store.query("SELECT 1 FROM tool_declarations WHERE substr(name, 1, ?) = ? LIMIT 1",
                                (len(prefix), prefix)))
    return False


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


def remove(store: ToolStore, name: str, *, source: str, force: bool = False, now: bool = False,
           require_seen: bool = False) -> dict[str, Any]:
    """``require_seen`` (the CLI, where names are typed): refuse a name the inventory never saw unless ``force``."""
    name = (name or "").strip()
    if not tn.valid_removal_name(name):
        raise RemovalError(f"{name!r} is not a tool name (use a declared name, mcp__<server>, or skill__<name>)")
    if require_seen and not force and not seen(store, name):
        raise NeverSeen(name)
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
