"""Which conversation view reads which request format: the ``view_for`` dispatch.

Above the base view (``wire/view.py``) and the three per-format views, so the
base knows none of them and none of them imports another.
"""

from __future__ import annotations

from typing import Any

from scalpel_desktop.wire.anthropic_view import AnthropicView
from scalpel_desktop.wire.openai_chat_view import ChatView
from scalpel_desktop.wire.openai_responses_view import ResponsesView
from scalpel_desktop.wire.view import ConversationView

# endpoint -> (view class, the key holding its history)
FORMATS: dict[str, tuple[type[ConversationView], str]] = {
    "messages": (AnthropicView, "messages"),
    "chat": (ChatView, "messages"),
    "responses": (ResponsesView, "input"),
}


def view_for(endpoint: str, doc: Any, previous: ConversationView | None = None) -> ConversationView | None:
    """The view for ``endpoint`` ('messages' | 'chat' | 'responses'), or None when the body is not one.

    ``previous``: the view of the conversation's previous request; its analysis
    of the leading messages that are the very same objects in ``doc`` (see
    ``pipeline/parse_reuse.py``) is shared instead of recomputed.
    """
    if not isinstance(doc, dict):
        return None
    fmt = FORMATS.get(endpoint)
    if fmt is None:
        return None
    cls, units_key = fmt
    try:
        if not isinstance(doc.get(units_key), list):
            return None
        return cls(doc, previous)
    except (TypeError, AttributeError, KeyError, ValueError):
        return None  # a shape we do not understand: no view, the request passes untouched
