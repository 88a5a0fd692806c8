"""What the doom rules know of one tool result, and the settings they read.

``surgery/doom.py`` scans a conversation with these; ``surgery/doom_watch.py``
asks the same questions of a later request's new results, so the two can
never disagree on what a result is (its size, the kinds of death it may be
cut for, the file it touches, whether it is a stub).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any, NamedTuple

from scalpel_desktop.accounting.tokens import estimate_tokens
from scalpel_desktop.config import setting as _setting
from scalpel_desktop.surgery.file_access import FILE_WRITERS, _Access, file_access
from scalpel_desktop.wire.hashing import canonical_bytes
from scalpel_desktop.wire.view import ToolResult

KINDS = ("superseded_read", "duplicate", "failed", "dead_snapshot", "stale_large")
TIER_KINDS = {1: frozenset(KINDS[:3]), 2: frozenset(KINDS)}

# Results that carry the user's words or a subagent's whole work.
PROTECTED_TOOLS = frozenset({"AskUserQuestion", "ExitPlanMode", "Task", "Agent"})
SNAPSHOT_NAME = re.compile(r"(?:^|_)(?:snapshot|screenshot|take_snapshot|read_page|get_page_text)$", re.I)
STUB_MARK = "[scalpel:"
STUB_TOKENS = 60  # the largest stub we write, in tokens
IMAGE_TOKENS = 1_600  # an image block, roughly (a Read of a picture)

@dataclass(frozen=True)
class DoomSpan:
    tool_use_id: str
    kind: str
    tokens: int  # estimated tokens of the original content
    unit_index: int  # unit holding the result
    died_at_unit: int  # unit at which it became dead (<= the last unit)


def result_tokens(result: ToolResult) -> int:
    """Estimated tokens of a result's content: the one place the estimator is called."""
    return estimate_tokens(result.text) + IMAGE_TOKENS * result.images


def is_stub(content: Any) -> bool:
    if isinstance(content, str):
        return content.startswith(STUB_MARK)
    if isinstance(content, list) and len(content) == 1 and isinstance(content[0], dict):
        t = content[0].get("text")
        return isinstance(t, str) and t.startswith(STUB_MARK)
    return False


@functools.lru_cache(maxsize=4096)
def is_snapshot_tool(name: str) -> bool:
    short = name.rsplit("__", 1)[-1]
    return bool(SNAPSHOT_NAME.search(short))


# -- the analysis ---------------------------------------------------------------


class DoomLimits(NamedTuple):
    kinds: frozenset[str]
    keep_recent: int
    failed_age: int
    stale_min: int
    stale_age: int
    min_cut: int
    cut_mcp: bool


def doom_limits(config_like: Any = None, tier: int | None = None) -> DoomLimits:
    """The settings the rules read (``tier`` None: the configured one)."""
    if tier is None:
        tier = int(_setting(config_like, "tier"))
    return DoomLimits(
        TIER_KINDS.get(int(tier), TIER_KINDS[2]),
        int(_setting(config_like, "keep_recent")),
        int(_setting(config_like, "failed_age_messages")),
        int(_setting(config_like, "stale_min_tokens")),
        int(_setting(config_like, "stale_age_messages")),
        max(int(_setting(config_like, "min_cut_tokens")), 2 * STUB_TOKENS),
        bool(_setting(config_like, "cut_mcp_results")),
    )


class _Facts:
    """What doom needs to know about one result, computed once per ToolResult object.

    Views share ToolResult objects between consecutive requests of a
    conversation (and replace, never mutate, them on an edit), so this cache
    makes the analysis of an unchanged prefix nearly free.
    """

    __slots__ = ("tokens", "allowed", "allowed_mcp", "snapshot", "dup_key", "callable_ok", "may_touch_file",
                 "has_cd", "_call", "_name", "_acc_key", "_acc")

    def __init__(self, r: ToolResult, call: Any):
        name = r.name or ""
        self.tokens = result_tokens(r)
        self.allowed = _allowed_kinds(r, False)
        self.allowed_mcp = _allowed_kinds(r, True)
        self.callable_ok = r.is_error is not True and r.name is not None and call is not None
        self.snapshot = bool(name) and is_snapshot_tool(name)
        self.dup_key = (r.text if not r.images else (r.text, _images_key(r))) if r.understood and (r.chars or r.images) else None
        self.may_touch_file = name in ("Read", "Bash") or name in FILE_WRITERS
        inp = call.input if call is not None else None
        self.has_cd = bool(
            name == "Bash" and isinstance(inp, dict) and isinstance(inp.get("command"), str) and _CD.search(inp["command"])
        )
        self._call, self._name = call, name
        self._acc_key: Any = None
        self._acc: _Access | None = None

    def access(self, cwd: str | None, cd_seen: bool) -> _Access | None:
        key = (cwd, cd_seen)
        if self._acc_key != key:
            self._acc = file_access(self._name, self._call.input, cwd, cd_seen)
            self._acc_key = key
        return self._acc


_CD = re.compile(r"\bcd\b")


def _facts(r: ToolResult, call: Any) -> _Facts:
    f = r.__dict__.get("_doom_facts")
    if f is None or f._call is not call:
        f = _Facts(r, call)
        r.__dict__["_doom_facts"] = f
    return f


def _images_key(r: ToolResult) -> Any:
    if not r.images:
        return None
    return canonical_bytes(r.content)


# The three answers of ``_allowed_kinds``, shared (immutable): a fresh set per result held
# ~1 KB per tool result in every remembered view (3.7 MB for a 2.6 MB Claude Code body).
_NO_KINDS: frozenset[str] = frozenset()
_SNAPSHOT_KINDS = frozenset({"dead_snapshot"})
_ALL_KINDS = frozenset(KINDS)


def _allowed_kinds(r: ToolResult, cut_mcp: bool) -> frozenset[str]:
    """The kinds of death this result may be cut for (empty: protected)."""
    if not r.understood or r.name is None or r.name in PROTECTED_TOOLS or is_stub(r.content):
        return _NO_KINDS
    if r.name.startswith("mcp__") and not cut_mcp:
        # An MCP result's meaning is unknown, except a snapshot tool's: a later
        # snapshot of the same tool shows the page as it is now.
        return _SNAPSHOT_KINDS if is_snapshot_tool(r.name) else _NO_KINDS
    return _ALL_KINDS
