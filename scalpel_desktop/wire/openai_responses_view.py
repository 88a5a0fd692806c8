"""The conversation view of an OpenAI Responses request.

History is the ``input`` item list: messages (``role`` + ``content``),
``function_call`` items (``call_id``, ``name``, ``arguments`` as a JSON
string), ``function_call_output`` items (``call_id``, ``output``: a string or
a list of ``input_text`` / ``input_image`` parts), reasoning items and
others, which are read and never written. The system region is
``instructions``. No cache markers: the TTL is unknown (None).
"""

from __future__ import annotations

from typing import Any

from scalpel_desktop.wire.content_parts import describe_parts, lead_texts, parse_arguments
from scalpel_desktop.wire.view import ConversationView, ToolCall, ToolResult, Unit, find_cwd

CALL_TYPES = ("function_call", "custom_tool_call")


class ResponsesView(ConversationView):
    endpoint = "responses"
    text_block_type = "input_text"
    units_key = "input"

    def _index(self, start: int = 0) -> None:
        pending: list[ToolResult] = []
        items = self.doc["input"]
        for i in range(start, len(items)):
            item = items[i]
            if not isinstance(item, dict):
                self.units.append(Unit(i, "?", item))
                continue
            t = item.get("type")
            role = item.get("role") if isinstance(item.get("role"), str) else (t if isinstance(t, str) else "?")
            self.units.append(Unit(i, role, item))
            cid = item.get("call_id")
            if not isinstance(cid, str):
                continue
            if t in CALL_TYPES and cid not in self.tool_calls:
                name = item.get("name") if isinstance(item.get("name"), str) else ""
                args = parse_arguments(item.get("arguments")) if t == "function_call" else item.get("input")
                self.tool_calls[cid] = ToolCall(cid, name, args, i)
            elif t == "function_call_output":
                c = item.get("output")
                text, images, understood = self._describe(c)
                pending.append(ToolResult(cid, i, None, None, c, text, len(text), None, images, understood))
        self._attach_results(pending)

    def _describe(self, content: Any) -> tuple[str, int, bool]:
        return describe_parts(content, ("input_text", "output_text", "text"), ("input_image",))

    def ttl(self) -> str | None:
        """None: OpenAI caches automatically and its retention is not stated per request."""
        return None

    def cwd(self) -> str | None:
        texts: list[str] = []
        if isinstance(self.doc.get("instructions"), str):
            texts.append(self.doc["instructions"])
        return find_cwd(texts + lead_texts(self.units))

    def _write_content(self, res: ToolResult, new_content: Any) -> None:
        self._own_unit(res.unit_index)["output"] = new_content
