"""Which conversation a request belongs to.

The key is (session id, agent id). Claude Code subagents send their parent's
session id and model and differ only by ``x-claude-code-agent-id``: without
the agent id, the cache state of one would overwrite the other's.

Session id, in order: ``metadata.user_id`` as a JSON string holding
``session_id`` (2.1.x), ``metadata.user_id`` as ``user_<hex>_account__session_<uuid>``
(2.0.x), the ``x-claude-code-session-id`` header, OpenAI's
``prompt_cache_key``; else a stable hash of the first user message.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from collections.abc import Mapping
from typing import Any

_SESSION_IN_USER_ID = re.compile(r"_session_([0-9a-fA-F-]{8,})")


@dataclass(frozen=True)
class ConversationKey:
    session_id: str
    agent_id: str = ""
    source: str = "hash"  # metadata | header | prompt_cache_key | hash

    def __str__(self) -> str:
        return f"{self.session_id}/{self.agent_id}" if self.agent_id else self.session_id


def _lower(headers: Mapping[str, str]) -> dict[str, str]:
    return {k.lower(): v for k, v in headers.items()}


def session_from_user_id(user_id: Any) -> str | None:
    if not isinstance(user_id, str) or not user_id:
        return None
    if user_id.startswith("{"):
        try:
            parsed = json.loads(user_id)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict) and isinstance(parsed.get("session_id"), str) and parsed["session_id"]:
            return parsed["session_id"]
    m = _SESSION_IN_USER_ID.search(user_id)
    return m.group(1) if m else None


def _first_user_text(body: Mapping[str, Any]) -> str:
    """The first user message (Anthropic/Chat ``messages`` or Responses ``input``), as JSON."""
    items = body.get("messages")
    if items is None:
        items = body.get("input")
    if isinstance(items, str):
        return items
    if isinstance(items, list):
        for m in items:
            if isinstance(m, dict) and m.get("role") == "user":
                return json.dumps(m.get("content"), sort_keys=True, ensure_ascii=False)
    return ""


def conversation_key(headers: Mapping[str, str], body: Mapping[str, Any] | None) -> ConversationKey:
    h = _lower(headers)
    agent = h.get("x-claude-code-agent-id", "") or ""
    body = body if isinstance(body, Mapping) else {}
    meta = body.get("metadata")
    if isinstance(meta, Mapping):
        sid = session_from_user_id(meta.get("user_id"))
        if sid:
            return ConversationKey(sid, agent, "metadata")
    sid = h.get("x-claude-code-session-id")
    if sid:
        return ConversationKey(sid, agent, "header")
    pck = body.get("prompt_cache_key")
    if isinstance(pck, str) and pck:
        return ConversationKey(pck, agent, "prompt_cache_key")
    digest = hashlib.sha256(_first_user_text(body).encode("utf-8")).hexdigest()[:16]
    return ConversationKey("h-" + digest, agent, "hash")
