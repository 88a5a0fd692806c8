"""The tool inventory: what each session declared, how big it is, what it called.

Pure parsing (``declared_items``, ``calls_in``) plus ``InventoryRecorder``, which
turns one request into store writes. Declarations are the client's own
(before the tool filter ran): built-ins, client tools, MCP tools, deferred
tools, server-side tools, and the entries of Claude Code's skill listing
(``skill__<name>``). Calls come from ``tool_use`` blocks (a Skill call counts
for ``skill__<skill>`` too). Sizes are estimated tokens of the declaration's
compact JSON (a skill: of its listing entry).
"""

from __future__ import annotations

import pickle
import re
import threading
from typing import Any

from scalpel_desktop.accounting.tokens import estimate_tokens
from scalpel_desktop.tools import names as tn
from scalpel_desktop.tools import skills as sk
from scalpel_desktop.tools.filter import tool_uses
from scalpel_desktop.tools.store import Declared, ToolStore
from scalpel_desktop.wire.jsoncodec import dumps

_SENTENCE_END = re.compile(r"(?<=[.!?])\s|\n")


def summary_of(description: Any, limit: int = 160) -> str:
    """The first sentence (or line) of a description, at most ``limit`` characters."""
    if not isinstance(description, str):
        return ""
    text = description.strip()
    m = _SENTENCE_END.search(text)
    first = text[: m.start()] if m else text
    return first[:limit].strip()


def declared_items(doc: Any, user_agent: str = "") -> list[Declared] | None:
    """Every declaration of one request; None when the request declares no tools at all."""
    if not isinstance(doc, dict):
        return None
    tools = doc.get("tools")
    messages = doc.get("messages") if isinstance(doc.get("messages"), list) else []
    if not isinstance(tools, list) or not tools:
        return None
    claude_code = tn.is_claude_code(user_agent)
    out: list[Declared] = []
    for t in tools:
        if not isinstance(t, dict):
            continue
        name = t.get("name")
        if not isinstance(name, str):
            function = t.get("function")  # OpenAI Chat: {"type": "function", "function": {...}}
            name = function.get("name") if isinstance(function, dict) else None
            if not isinstance(name, str):
                name = t.get("type") if isinstance(t.get("type"), str) else None
            if not name:
                continue
            desc = function.get("description") if isinstance(function, dict) else None
            out.append(Declared(name, "client" if isinstance(function, dict) else "server", None,
                                estimate_tokens(dumps(t).decode("utf-8")), summary_of(desc)))
            continue
        kind = tn.declaration_kind(t, claude_code=claude_code)
        out.append(Declared(name, kind, tn.mcp_server(name), estimate_tokens(dumps(t).decode("utf-8")),
                            summary_of(t.get("description"))))
    for i in sk.listing_messages(messages):
        for text in sk.message_texts(messages[i]):
            for e in sk.parse_entries(text):
                entry = text[e.start:e.end]
                desc = entry.split(": ", 1)[1] if ": " in entry else ""
                out.append(Declared(tn.SKILL_PREFIX + e.name, "skill", None, estimate_tokens(entry), summary_of(desc)))
    seen: set[str] = set()
    unique = []
    for d in out:
        if d.name not in seen:
            seen.add(d.name)
            unique.append(d)
    return unique


def calls_in(messages: Any, start: int = 0) -> list[tuple[str, str]]:
    """(tool_use id, name) of every call in ``messages[start:]`` (Anthropic and OpenAI Chat)."""
    out: list[tuple[str, str]] = []
    if not isinstance(messages, list):
        return out
    for m in messages[max(0, start):]:
        if not isinstance(m, dict):
            continue
        out += [(cid, name) for cid, name in tool_uses(m) if cid]
        for c in m.get("tool_calls") or []:  # OpenAI Chat
            f = c.get("function") if isinstance(c, dict) else None
            if isinstance(f, dict) and isinstance(f.get("name"), str) and isinstance(c.get("id"), str):
                out.append((c["id"], f["name"]))
    return out


TARGET_KEYS = ("file_path", "notebook_path", "path")
TARGET_MAX = 300


def call_targets(messages: Any, start: int = 0) -> dict[str, str]:
    """tool_use id -> the file a call worked on (its input's ``file_path`` / ``notebook_path`` /
    ``path``, under ``~``), for the calls in ``messages[start:]`` that name one (Anthropic)."""
    from scalpel_desktop.accounting.context_regions import under_home

    out: dict[str, str] = {}
    if not isinstance(messages, list):
        return out
    for m in messages[max(0, start):]:
        content = m.get("content") if isinstance(m, dict) and m.get("role") == "assistant" else None
        if not isinstance(content, list):
            continue
        for b in content:
            if not (isinstance(b, dict) and b.get("type") == "tool_use" and isinstance(b.get("id"), str)):
                continue
            inp = b.get("input")
            if isinstance(inp, dict):
                target = next((inp[k] for k in TARGET_KEYS if isinstance(inp.get(k), str) and inp[k]), None)
                if target:
                    out[b["id"]] = under_home(target)[:TARGET_MAX]
    return out


class InventoryRecorder:
    """Remembers, per conversation, what was already written, so a request costs little."""

    def __init__(self, store: ToolStore):
        self.store = store
        self._lock = threading.Lock()
        self._scanned: dict[tuple[str, str], int] = {}  # (session, agent) -> messages already scanned
        self._declared: dict[str, tuple] = {}  # session -> signature of the last declarations written

    def prepare(self, session: str, agent: str, doc: Any, user_agent: str, model: str, now: float) -> tuple:
        """What one request adds to the store, as small values (``write``'s arguments): its
        declarations when they are new, and the calls, with their files, in the messages not
        scanned yet. The inventory stage runs this after the answer and queues only the result:
        a queued job that held the request's document kept each one alive until the writer got
        to it (after a burst of first sightings, dozens of documents: issue 12)."""
        messages = doc.get("messages") if isinstance(doc, dict) else None
        declared = declared_items(doc, user_agent)
        key = (session, agent)
        with self._lock:
            start = self._scanned.get(key, 0)
            n = len(messages) if isinstance(messages, list) else 0
            if n < start:  # compaction or a rewritten history: scan again
                start = 0
            self._scanned[key] = max(0, n - 1)  # the last message is rewritten by the client: see it again
            sig = None if declared is None else tuple((d.name, d.tokens) for d in declared)
            known = self._declared.get(session)
            write_declared = declared is not None and (known is None or not set(sig) <= set(known))
            if write_declared:
                self._declared[session] = tuple(set(sig) | set(known or ()))
        calls = calls_in(messages, start)
        return (session, user_agent, model, now, declared if write_declared else None, calls,
                call_targets(messages, start) if calls else None)

    def write_packed(self, job: bytes) -> None:
        """``write`` of a prepared request queued pickled (``InventoryStage.on_response``)."""
        self.write(*pickle.loads(job))

    def write(self, session: str, user_agent: str, model: str, now: float, declared: list[Declared] | None,
              calls: list[tuple[str, str]], targets: dict[str, str] | None) -> None:
        """The store's rows for one prepared request (the tools' background writer runs this)."""
        self.store.save_inventory(session, user_agent, model, now, declared, calls, new_request=True,
                                  targets=targets)
