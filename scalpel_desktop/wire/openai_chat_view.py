"""The conversation view of an OpenAI Chat Completions request.

Tool calls are ``tool_calls`` entries of assistant messages (arguments are a
JSON string); their results are ``role: "tool"`` messages carrying
``tool_call_id`` and a string or a list of content parts. The format has no
error flag (``is_error`` is None) and no cache markers: OpenAI caches exact
prefixes automatically, so there are no breakpoints and the TTL is unknown
(None; ``prompt_cache_retention`` stays in the body for the economist to read).
"""

from __future__ import annotations

from typing import Any

from scalpel_desktop.wire.content_parts import describe_parts, lead_texts, parse_arguments
from scalpel_desktop.wire.view import ConversationView, ToolCall, ToolResult, Unit, find_cwd


class ChatView(ConversationView):
    endpoint = "chat"
    text_block_type = "text"
    units_key = "messages"

    def _index(self, start: int = 0) -> None:
        pending: list[ToolResult] = []
        messages = self.doc["messages"]
        for i in range(start, len(messages)):
            m = messages[i]
            role = m.get("role") if isinstance(m, dict) else None
            self.units.append(Unit(i, role if isinstance(role, str) else "?", m))
            if not isinstance(m, dict):
                continue
            if role == "assistant" and isinstance(m.get("tool_calls"), list):
                for tc in m["tool_calls"]:
                    if not isinstance(tc, dict) or not isinstance(tc.get("id"), str):
                        continue
                    fn = tc.get("function") if isinstance(tc.get("function"), dict) else {}
                    name = fn.get("name") if isinstance(fn.get("name"), str) else ""
                    if tc["id"] not in self.tool_calls:
                        self.tool_calls[tc["id"]] = ToolCall(tc["id"], name, parse_arguments(fn.get("arguments")), i)
            elif role == "tool" and isinstance(m.get("tool_call_id"), str):
                c = m.get("content")
                text, images, understood = self._describe(c)
                pending.append(ToolResult(m["tool_call_id"], i, None, None, c, text, len(text), None, images, understood))
        self._attach_results(pending)

    def _describe(self, content: Any) -> tuple[str, int, bool]:
        return describe_parts(content, ("text",), ("image_url",))

    def ttl(self) -> str | None:
        """None: OpenAI caches automatically and its retention is not stated per request."""
        return None

    def cwd(self) -> str | None:
        return find_cwd(lead_texts(self.units))

    def _write_content(self, res: ToolResult, new_content: Any) -> None:
        self._own_unit(res.unit_index)["content"] = new_content
