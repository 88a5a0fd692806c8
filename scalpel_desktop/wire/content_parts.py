"""Reading the parts of a message or tool result, shared by the three conversation views.

Each format names its parts differently (Anthropic ``text``/``image`` blocks,
OpenAI Chat ``text``/``image_url`` parts, Responses ``input_text``/
``input_image``), but reads them the same way: the text of the text parts,
how many images, and whether every part was one of the two (anything else -
documents, ``tool_reference``, unknown parts - makes a result not understood,
so it is never cut).
"""

from __future__ import annotations

import json
from typing import Any


def describe_parts(content: Any, text_types: tuple[str, ...], image_types: tuple[str, ...]) -> tuple[str, int, bool]:
    """(text, image count, understood) of a string, None or a list of parts."""
    if content is None:
        return "", 0, True
    if isinstance(content, str):
        return content, 0, True
    if not isinstance(content, list):
        return "", 0, False
    parts: list[str] = []
    images = 0
    understood = True
    for p in content:
        t = p.get("type") if isinstance(p, dict) else None
        if t in text_types and isinstance(p.get("text"), str):
            parts.append(p["text"])
        elif t in image_types:
            images += 1
        else:
            understood = False
    return "\n".join(parts), images, understood


def message_texts(content: Any) -> list[str]:
    """Every text of a message's content (a string, or the parts carrying a string ``text``)."""
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        return [p.get("text", "") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)]
    return []


def parse_arguments(args: Any) -> Any:
    """An OpenAI tool call's arguments: the JSON string parsed, or left as it is when it is not JSON."""
    if isinstance(args, str):
        try:
            return json.loads(args)
        except ValueError:
            return args
    return args


def lead_texts(units: Any, n: int = 6) -> list[str]:
    """The texts of the first ``n`` units (``.raw`` messages: where a client states its
    working directory). Shared by the Chat and Responses views."""
    texts: list[str] = []
    for u in units[:n]:
        if isinstance(u.raw, dict):
            texts += message_texts(u.raw.get("content"))
    return texts
