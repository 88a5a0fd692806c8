"""Where a request's prompt goes, by region: sizes only, never content.

``measure(endpoint, doc, body_bytes)`` splits a request body into the regions
Claude Code's ``/context`` shows: the system prompt, the tool declarations
(built-in and client tools apart from MCP tools, ``mcp__*``), the messages,
and the tool results inside them. Each region is sized in bytes of compact
JSON and turned into estimated tokens at the default characters per token;
the dashboard scales the split to the request's measured prompt total
(input + cache writes + cache reads) and labels it an estimate.

Cheap on purpose (it runs for every request, in the identify stage): the
system and tool declarations are serialized once each with orjson, and for
the messages only the lengths of tool-result strings are summed; the
messages region is what is left of the body.

``working_directory(doc)`` is the project a session is named by: the
``Primary working directory:`` line of Claude Code's environment message,
under ``~`` when it is below the home directory (never the user's name).
"""

from __future__ import annotations

import re
from typing import Any

from scalpel_desktop.accounting.tokens import CHARS_PER_TOKEN_DEFAULT
from scalpel_desktop.wire.jsoncodec import dumps

REGIONS = ("system", "tools", "mcp_tools", "messages", "tool_results")
MCP_PREFIX = "mcp__"
_CWD = re.compile(r"(?:Primary working directory|Working directory):\s*([^\n]+?)\s*(?:\n|$)")
PROJECT_MAX = 300


def _tok(n: int) -> int:
    return 0 if n <= 0 else max(1, round(n / CHARS_PER_TOKEN_DEFAULT))


def _size(obj: Any) -> int:
    if obj is None:
        return 0
    try:
        return len(dumps(obj))
    except (TypeError, ValueError):
        return 0


def _result_chars(block: dict) -> int:
    content = block.get("content")
    if isinstance(content, str):
        return len(content)
    n = 0
    if isinstance(content, list):
        for c in content:
            if isinstance(c, dict):
                t = c.get("text")
                if isinstance(t, str):
                    n += len(t)
                elif c.get("type") in ("image", "document"):
                    n += 1600 * int(CHARS_PER_TOKEN_DEFAULT)  # an image is ~1,600 tokens
    return n


def measure(endpoint: str, doc: Any, body_bytes: int, results_before: int = 0) -> dict[str, int] | None:
    """Estimated tokens per region of ``doc`` (None when it is not a conversation body).
    ``results_before``: ``result_chars`` of messages the body has before ``doc``'s own (a body
    measured from its new messages: ``surgery/ghost_turn.py``)."""
    if not isinstance(doc, dict) or endpoint not in ("messages", "chat", "responses"):
        return None
    system = doc.get("system") if endpoint == "messages" else doc.get("instructions")
    tools = doc.get("tools")
    plain, mcp = [], []
    if isinstance(tools, list):
        for t in tools:
            name = t.get("name") if isinstance(t, dict) else None
            if name is None and isinstance(t, dict) and isinstance(t.get("function"), dict):
                name = t["function"].get("name")
            (mcp if isinstance(name, str) and name.startswith(MCP_PREFIX) else plain).append(t)
    sys_b, tools_b, mcp_b = _size(system), _size(plain), _size(mcp)
    messages = doc.get("messages") if endpoint != "responses" else doc.get("input")
    results = results_before + result_chars(endpoint, messages)
    if endpoint == "chat" and isinstance(messages, list):
        sys_b += sum(_size(m) for m in messages if isinstance(m, dict) and m.get("role") == "system")
    rest = max(0, body_bytes - sys_b - tools_b - mcp_b - results)
    return {"system": _tok(sys_b), "tools": _tok(tools_b), "mcp_tools": _tok(mcp_b), "messages": _tok(rest),
            "tool_results": _tok(results)}


def result_chars(endpoint: str, messages: Any) -> int:
    """The characters of the tool results in ``messages`` (what ``measure`` counts as that region)."""
    results = 0
    if not isinstance(messages, list):
        return 0
    for m in messages:
        if not isinstance(m, dict):
            continue
        if endpoint == "messages":
            content = m.get("content")
            if isinstance(content, list):
                for b in content:
                    if isinstance(b, dict) and b.get("type") == "tool_result":
                        results += _result_chars(b)
        elif m.get("role") == "tool" or m.get("type") == "function_call_output":
            c = m.get("content", m.get("output"))
            results += len(c) if isinstance(c, str) else _size(c)
    return results


def working_directory(doc: Any, home: str | None = None) -> str | None:
    """The working directory stated in the system prompt or the first user message, under ``~``."""
    if not isinstance(doc, dict):
        return None
    texts: list[str] = []
    for part in (doc.get("system"), doc.get("instructions")):
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, list):
            texts += [b.get("text") for b in part if isinstance(b, dict) and isinstance(b.get("text"), str)]
    messages = doc.get("messages") if isinstance(doc.get("messages"), list) else doc.get("input")
    if isinstance(messages, list):
        for m in messages[:3]:
            c = m.get("content") if isinstance(m, dict) else None
            if isinstance(c, str):
                texts.append(c)
            elif isinstance(c, list):
                texts += [b.get("text") for b in c[:8] if isinstance(b, dict) and isinstance(b.get("text"), str)]
    for t in texts:
        if "orking directory:" in t:
            m = _CWD.search(t)
            if m:
                return under_home(m.group(1).strip(), home)[:PROJECT_MAX]
    return None


def under_home(path: str, home: str | None = None) -> str:
    """``path`` as ``~/...`` when below ``home`` (default: the user's); a pure string operation."""
    if home is None:
        from scalpel_desktop.paths import user_home

        home = str(user_home())
    home = home.rstrip("/")
    if home and (path == home or path.startswith(home + "/")):
        return "~" + path[len(home):]
    return path
