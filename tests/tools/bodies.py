"""Synthetic Claude-Code-shaped request bodies for the tools tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from scalpel_desktop.exchange import ApiRequest
from scalpel_desktop.wire.jsoncodec import dumps

SKILLS_TEXT = (
    "# Environment\nYou have been invoked in the following environment: \n - Primary working directory: /p\n\n"
    "Available agent types for the Agent tool:\n- Explore: searches (Tools: Read, Grep)\n\n"
    "The following skills are available for use with the Skill tool:\n\n"
    "- dataviz: Use this skill for charts.\n"
    "- claude-api: Reference for the Claude API.\nTRIGGER — read FIRST.\n"
    "- code-review: Review the current diff.\n\n"
    "Today's date is 2026-11-29."
)


def tool(name: str, desc: str = "", **extra: Any) -> dict:
    d = {"name": name, "description": desc or f"The {name} tool does {name.lower()} things.",
         "input_schema": {"type": "object", "properties": {"x": {"type": "string"}}}}
    d.update(extra)
    return d


def body(tools: list[dict], *, system: str = "You are a helpful agent.", turns: int = 0,
         session: str = "sess-1", skills: bool = True, calls: list[str] | None = None,
         listing_as_list: bool = False, extra_messages: list[dict] | None = None, **top: Any) -> dict:
    """A body with ``turns`` completed tool turns (calling ``calls`` round-robin, default Bash)."""
    msgs: list[dict] = [{"role": "user", "content": [{"type": "text", "text": "Fix the TODO in notes.txt."}]}]
    if skills:
        msgs.append({"role": "system", "content": [{"type": "text", "text": SKILLS_TEXT}] if listing_as_list else SKILLS_TEXT})
    calls = calls or ["Bash"]
    for i in range(turns):
        name = calls[i % len(calls)]
        tid = f"toolu_{session}_{i:04d}"
        msgs.append({"role": "assistant", "content": [{"type": "text", "text": f"step {i}"},
                                                      {"type": "tool_use", "id": tid, "name": name, "input": {"x": str(i)}}]})
        msgs.append({"role": "user", "content": [{"tool_use_id": tid, "type": "tool_result", "content": f"ok {i}"}]})
    msgs += extra_messages or []
    b = {"model": "claude-sonnet-4-5", "messages": msgs,
         "system": [{"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.332;"},
                    {"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}],
         "tools": tools,
         "metadata": {"user_id": json.dumps({"device_id": "d", "account_uuid": "", "session_id": session})},
         "max_tokens": 1000, "stream": True}
    b.update(top)
    return b


def request(doc: dict, *, session: str | None = None, agent: str = "", received_at: float = 1_800_000_000.0,
            raw: bytes | None = None) -> ApiRequest:
    headers = {"user-agent": "claude-cli/2.1.332 (external, sdk-cli)", "anthropic-version": "2023-06-01",
               "content-type": "application/json"}
    if session:
        headers["x-claude-code-session-id"] = session
    if agent:
        headers["x-claude-code-agent-id"] = agent
    return ApiRequest(method="POST", path="/v1/messages", query="beta=true", api="anthropic", endpoint="messages",
                      headers=headers, body=raw if raw is not None else dumps(doc), received_at=received_at)


CC_TOOLS = ["Agent", "Bash", "Edit", "ListAgents", "Read", "ReportFindings", "ScheduleWakeup", "Skill",
            "ToolSearch", "Workflow", "Write"]


def corpus_requests(version: str = "2.1.332") -> list[dict]:
    from tests.support import corpus_dir

    path = corpus_dir("wire", f"claude-code-{version}") / "requests.jsonl"
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]
