"""What a tool name is: its kind, its MCP server, whether a removal name covers it.

Removal names are the user's words: a declared tool name (``Workflow``,
``mcp__github__create_issue``), a whole MCP server (``mcp__github``) or a skill
listing entry (``skill__code-review``). Kinds as stored in the inventory:

* ``builtin``  a Claude Code built-in (declared by Claude Code, not ``mcp__``)
* ``client``   a tool declared by another client
* ``mcp``      ``mcp__<server>__<tool>``
* ``deferred`` declared with ``defer_loading: true`` (schema loaded on demand)
* ``server``   a server-side tool declared by ``type`` (web search, code execution, ...):
               never removed
* ``skill``    an entry of Claude Code's skill listing, named ``skill__<name>``
"""

from __future__ import annotations

import re
from typing import Any, Mapping

MCP_PREFIX = "mcp__"
SKILL_PREFIX = "skill__"

# Claude Code built-ins seen on the wire (2.0.77 and 2.1.332 captures) plus the common
# ones of versions in between. Used when a removal is asked for before any session of the
# name was captured; the inventory's own ``builtin`` kind is the main source.
KNOWN_BUILTINS: dict[str, str] = {
    "Agent": "launching subagents",
    "Task": "launching subagents",
    "TaskOutput": "reading a background task's output",
    "TaskStop": "stopping a background task",
    "Bash": "running shell commands",
    "BashOutput": "reading background shell output",
    "KillShell": "stopping a background shell",
    "Glob": "finding files by pattern",
    "Grep": "searching file contents",
    "Read": "reading files",
    "Edit": "editing files",
    "MultiEdit": "several edits to one file at once",
    "Write": "writing files",
    "NotebookEdit": "editing Jupyter notebooks",
    "WebFetch": "fetching web pages",
    "WebSearch": "searching the web",
    "TodoWrite": "keeping a task list",
    "ExitPlanMode": "leaving plan mode",
    "EnterPlanMode": "entering plan mode",
    "AskUserQuestion": "asking you multiple-choice questions",
    "Skill": "invoking skills",
    "SlashCommand": "running slash commands",
    "LSP": "language-server queries",
    "ToolSearch": "loading deferred tools (every deferred tool becomes unusable)",
    "ListAgents": "listing running agents",
    "SendMessage": "messaging other agents",
    "ReportFindings": "reporting findings in a structured form",
    "ScheduleWakeup": "scheduling itself to resume later",
    "Workflow": "running multi-step workflow scripts",
    "Monitor": "monitoring long-running processes",
    "CronCreate": "creating scheduled jobs",
    "CronDelete": "deleting scheduled jobs",
    "CronList": "listing scheduled jobs",
    "EnterWorktree": "entering a git worktree",
    "ExitWorktree": "leaving a git worktree",
    "DeferredToolPlaceholder": "deferred tool loading (every deferred tool becomes unusable)",
}

_NAME_RE = re.compile(r"^[A-Za-z0-9_.:/@+-]{1,200}$")


def valid_removal_name(name: str) -> bool:
    return bool(_NAME_RE.match(name or "")) and name not in (MCP_PREFIX, SKILL_PREFIX)


def mcp_server(name: str) -> str | None:
    """``mcp__github__create_issue`` -> ``github``; None for other names."""
    if not name.startswith(MCP_PREFIX):
        return None
    rest = name[len(MCP_PREFIX):]
    server, sep, _tool = rest.partition("__")
    return server if sep and server else None


def is_server_tool(decl: Mapping[str, Any]) -> bool:
    """A server-side tool is declared by a versioned ``type`` (``web_search_20250305``)."""
    t = decl.get("type")
    return isinstance(t, str) and t not in ("custom", "function")


def declaration_kind(decl: Mapping[str, Any], *, claude_code: bool) -> str:
    name = decl.get("name") if isinstance(decl.get("name"), str) else ""
    if is_server_tool(decl):
        return "server"
    if mcp_server(name):
        return "mcp"
    if decl.get("defer_loading") is True:
        return "deferred"
    if claude_code:
        return "builtin"
    return "client"


def is_claude_code(user_agent: str) -> bool:
    return user_agent.startswith("claude-cli/") or "claude-code" in user_agent


def covers(removal: str, tool_name: str) -> bool:
    """Does removal name ``removal`` remove the tool ``tool_name``?"""
    if removal == tool_name:
        return True
    if removal.startswith(MCP_PREFIX) and mcp_server(removal) is None:
        # a server name: mcp__github covers mcp__github__*
        return tool_name.startswith(removal + "__")
    return False


def skill_removal(name: str) -> str | None:
    """``skill__code-review`` -> ``code-review``."""
    if name.startswith(SKILL_PREFIX) and len(name) > len(SKILL_PREFIX):
        return name[len(SKILL_PREFIX):]
    return None


def mentioned(name: str, text: str) -> bool:
    """Is ``name`` named in ``text`` as a whole word (case-sensitive)?"""
    if not name or name not in text:
        return False
    return re.search(r"(?<![\w])" + re.escape(name) + r"(?![\w])", text) is not None
