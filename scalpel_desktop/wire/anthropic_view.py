"""The conversation view of an Anthropic Messages request (Claude Code's format).

Claude Code specifics handled here (SPEC section 4):

* ``role: "system"`` messages inside ``messages`` are ordinary units;
* message content is a string or a block list; the last message flips
  between the two as its cache marker moves, so unit hashes treat a string
  as the single text block it stands for, and exclude cache markers;
* tool results carry a string or a block list (text, image,
  ``tool_reference`` for deferred tools); ``is_error`` may be absent;
* thinking blocks, tool_use inputs and unknown blocks are read, never written.
"""

from __future__ import annotations

from typing import Any

from scalpel_desktop.wire.content_parts import describe_parts
from scalpel_desktop.wire.hashing import as_blocks
from scalpel_desktop.wire.view import Breakpoint, ConversationView, ToolCall, ToolResult, Unit, find_cwd, ttl_of

# Blocks inside a tool result's content that we understand well enough to
# replace: plain text and images (a Read of a picture). ``tool_reference``
# (deferred tools loaded by ToolSearch), documents and anything else: never cut.
_TEXT, _IMAGE = ("text",), ("image",)


def describe_content(content: Any) -> tuple[str, int, bool]:
    """(text, image count, understood) of a tool result's content."""
    return describe_parts(content, _TEXT, _IMAGE)


class AnthropicView(ConversationView):
    endpoint = "messages"
    text_block_type = "text"
    units_key = "messages"

    def _index(self, start: int = 0) -> None:
        messages = self.doc["messages"]
        pending: list[ToolResult] = []
        units = self.units
        calls = self.tool_calls
        for i in range(start, len(messages)):
            m = messages[i]
            if type(m) is not dict:
                units.append(Unit(i, "?", m))
                continue
            role = m.get("role")
            units.append(Unit(i, role if type(role) is str else "?", m))
            content = m.get("content")
            if type(content) is not list:
                continue
            for j, blk in enumerate(content):
                if type(blk) is not dict:
                    continue
                t = blk.get("type")
                if t == "tool_use":
                    tid = blk.get("id")
                    if type(tid) is str and tid not in calls:
                        name = blk.get("name")
                        calls[tid] = ToolCall(tid, name if type(name) is str else "", blk.get("input"), i)
                elif t == "tool_result":
                    tid = blk.get("tool_use_id")
                    if type(tid) is not str:
                        continue
                    c = blk.get("content")
                    if type(c) is str:
                        text, images, understood = c, 0, True
                    else:
                        text, images, understood = describe_content(c)
                    err = blk.get("is_error")
                    pending.append(
                        ToolResult(tid, i, j, None, c, text, len(text), err if type(err) is bool else None, images,
                                   understood and role == "user")
                    )
        self._attach_results(pending)

    def _describe(self, content: Any) -> tuple[str, int, bool]:
        return describe_content(content)

    def _canonical_unit(self, raw: Any) -> Any:
        return as_blocks(raw)

    def breakpoints(self) -> list[Breakpoint]:
        out: list[Breakpoint] = []
        tools = self.doc.get("tools")
        if isinstance(tools, list):
            for i, t in enumerate(tools):
                if isinstance(t, dict) and "cache_control" in t:
                    out.append(Breakpoint("tools", i, None, ttl_of(t["cache_control"])))
        system = self.doc.get("system")
        if isinstance(system, list):
            for i, b in enumerate(system):
                if isinstance(b, dict) and "cache_control" in b:
                    out.append(Breakpoint("system", i, None, ttl_of(b["cache_control"])))
        for u in self.units:
            content = u.raw.get("content") if isinstance(u.raw, dict) else None
            if not isinstance(content, list):
                continue
            for j, blk in enumerate(content):
                if not isinstance(blk, dict):
                    continue
                if "cache_control" in blk:
                    out.append(Breakpoint("messages", u.index, j, ttl_of(blk["cache_control"])))
                inner = blk.get("content") if blk.get("type") == "tool_result" else None
                if isinstance(inner, list):
                    for b in inner:
                        if isinstance(b, dict) and "cache_control" in b:
                            out.append(Breakpoint("messages", u.index, j, ttl_of(b["cache_control"])))
        if "cache_control" in self.doc:
            out.append(Breakpoint("auto", None, None, ttl_of(self.doc["cache_control"])))
        return out

    def cwd(self) -> str | None:
        texts: list[str] = []
        system = self.doc.get("system")
        if isinstance(system, str):
            texts.append(system)
        elif isinstance(system, list):
            texts.extend(b.get("text", "") for b in system if isinstance(b, dict))
        for u in self.units[:6]:
            c = u.raw.get("content") if isinstance(u.raw, dict) else None
            if isinstance(c, str):
                texts.append(c)
            elif isinstance(c, list):
                texts.extend(b.get("text", "") for b in c if isinstance(b, dict) and b.get("type") == "text")
        return find_cwd(texts)

    def _write_content(self, res: ToolResult, new_content: Any) -> None:
        msg = self._own_unit(res.unit_index)
        content = list(msg["content"])
        blk = dict(content[res.block_index])
        blk["content"] = new_content
        content[res.block_index] = blk
        msg["content"] = content

