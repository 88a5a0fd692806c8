"""What the emulated upstream answers: scripts of turns, chosen statelessly.

A ``Script`` holds *tracks* (lists of ``Turn`` s). The answer to a request is
worked out from the request alone, never from server state, so a restarted
emulator, a ``claude --resume`` or a retried request all get the same turn:

* the *anchor* is the last user message that is a prompt (text, no
  tool results); the turn index is the number of assistant turns after it;
* the track is, in order: the one named by a ``SCRIPT:<name>`` marker in the
  anchor's text; ``"subagent"`` when the request carries an
  ``x-claude-code-agent-id`` header; ``"resume"`` when the anchor is not the
  conversation's first prompt; else ``"main"`` (a missing track falls back
  to ``"main"``);
* past the end of its track a conversation gets ``final_text``;
* with ``detect_side=True`` (Claude Code scripts), side requests without a
  marker (no tools, a small model, a tiny ``max_tokens``, a "Warmup" probe)
  get ``side_text`` instead, so titles and safety checks never consume turns.

Conversations are told apart by the caller's own history (session id and
agent id only pick the ``subagent`` track); two sessions running the same
script each walk it from the start.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from collections.abc import Callable, Mapping, Sequence
from typing import Any

MARKER = re.compile(r"SCRIPT:([A-Za-z0-9_.-]+)")


@dataclass(frozen=True)
class ToolCall:
    name: str
    input: Mapping[str, Any]


@dataclass(frozen=True)
class Turn:
    """One assistant answer: optional text, then tool calls (several = parallel)."""

    text: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    thinking: str | None = None  # thinking text when the request enables thinking ("" = omitted)

    @property
    def stop_reason(self) -> str:
        return "tool_use" if self.tool_calls else "end_turn"


def say(text: str) -> Turn:
    """A final text answer."""
    return Turn(text=text)


def call(name: str, _text: str | None = None, **tool_input: Any) -> Turn:
    """One tool call (with an optional text before it)."""
    return Turn(text=_text, tool_calls=(ToolCall(name, tool_input),))


def parallel(*calls: ToolCall | tuple[str, Mapping[str, Any]], text: str | None = None) -> Turn:
    """Several tool calls in one turn."""
    tc = tuple(c if isinstance(c, ToolCall) else ToolCall(c[0], dict(c[1])) for c in calls)
    return Turn(text=text, tool_calls=tc)


@dataclass
class Choice:
    """Why a request got its turn (recorded with every request)."""

    track: str
    index: int
    turn: Turn
    side: bool = False


@dataclass
class Script:
    main: Sequence[Turn] = (Turn(text="Hello from the scalpel emulator."),)
    tracks: Mapping[str, Sequence[Turn]] = field(default_factory=dict)
    final_text: str = "Done."
    side_text: str = "OK."
    detect_side: bool = False
    name: str = "default"

    def track(self, name: str) -> Sequence[Turn]:
        if name == "main":
            return self.main
        return self.tracks.get(name, self.main)

    def choose(self, headers: Mapping[str, str], body: Mapping[str, Any], api: str = "anthropic") -> Choice:
        view = conversation_shape(body, api)
        marker = MARKER.search(view.anchor_text or "")
        lower = {k.lower(): v for k, v in headers.items()}
        if marker is None and self.detect_side and is_side_request(body, view):
            return Choice("side", 0, Turn(text=self.side_text), side=True)
        if marker is not None and marker.group(1) in self.tracks:
            name = marker.group(1)
        elif lower.get("x-claude-code-agent-id") and "subagent" in self.tracks:
            name = "subagent"
        elif view.prompt_number > 1 and "resume" in self.tracks:
            name = "resume"
        else:
            name = "main"
        turns = self.track(name)
        idx = view.turns_since_anchor
        if idx < len(turns):
            return Choice(name, idx, turns[idx])
        return Choice(name, idx, Turn(text=self.final_text))


# A script may also be any callable (headers, body, api) -> Turn.
ScriptLike = Script | Callable[[Mapping[str, str], Mapping[str, Any], str], Turn]


def choose(script: ScriptLike, headers: Mapping[str, str], body: Mapping[str, Any], api: str) -> Choice:
    if isinstance(script, Script):
        return script.choose(headers, body, api)
    return Choice("callable", 0, script(headers, body, api))


@dataclass
class Shape:
    anchor_text: str
    turns_since_anchor: int
    prompt_number: int  # 1 for the first prompt of the conversation
    n_messages: int


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = []
    if isinstance(content, list):
        for b in content:
            if isinstance(b, Mapping) and b.get("type") in ("text", "input_text") and isinstance(b.get("text"), str):
                parts.append(b["text"])
    return "\n".join(parts)


def _is_prompt(msg: Mapping[str, Any]) -> bool:
    if msg.get("role") != "user":
        return False
    content = msg.get("content")
    if isinstance(content, str):
        return bool(content.strip())
    if isinstance(content, list):
        types = {b.get("type") for b in content if isinstance(b, Mapping)}
        return "tool_result" not in types and bool(types & {"text", "input_text", "image"})
    return False


def conversation_shape(body: Mapping[str, Any], api: str = "anthropic") -> Shape:
    """Anchor prompt, assistant turns after it and prompt number, for any of the 3 APIs."""
    items = body.get("messages")
    if items is None:
        items = body.get("input")
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]
    if not isinstance(items, list):
        items = []
    anchor = -1
    prompts = 0
    for i, m in enumerate(items):
        if isinstance(m, Mapping) and _is_prompt(m):
            anchor, prompts = i, prompts + 1
    turns = 0
    prev_call = False
    for m in items[anchor + 1:]:
        if not isinstance(m, Mapping):
            continue
        if m.get("role") == "assistant":
            turns += 1
            prev_call = False
        elif m.get("type") == "function_call":  # Responses: a run of calls is one turn
            if not prev_call:
                turns += 1
            prev_call = True
        else:
            prev_call = False
    text = _text_of(items[anchor].get("content")) if anchor >= 0 else ""
    return Shape(text, turns, prompts, len(items))


def is_side_request(body: Mapping[str, Any], shape: Shape | None = None) -> bool:
    """Claude Code's side requests: titles, topics, safety checks, warm-ups."""
    shape = shape or conversation_shape(body)
    if not body.get("tools"):
        return True
    if "haiku" in str(body.get("model", "")).lower():
        return True
    max_tokens = body.get("max_tokens")
    if isinstance(max_tokens, int) and max_tokens <= 1024:
        return True
    return shape.n_messages == 1 and shape.anchor_text.strip() == "Warmup"
