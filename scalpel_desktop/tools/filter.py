"""The tool filter: drop the declarations a session pinned for removal, safely.

Opt-in, per name, never inferred. ``filter_request(doc, pinned)`` is pure: the
tools sent depend only on the tools the client declared, the session's pinned
removal set, and the safety gates below, which read the request itself:

* kept anyway: a server-side tool (declared by ``type``); a tool that
  ``tool_choice`` forces; a name referenced by a ``tool_reference`` block anywhere
  in the history (removing it makes the API answer 400); a name still mentioned
  in the system prose (top-level ``system`` and later ``role: "system"``
  messages; the first message, the environment snapshot and the skill listing
  are excluded from that check); the last remaining (non-deferred) tool.
* left alone entirely: a request whose last assistant turn calls a removed name
  (its result is being sent now), and any request whose shape we do not expect.

Gates only ever keep more. History is append-only, so a gate that fires once
fires for every later request of the session too: the tools array changes at
most once, and then only because the client itself changed the conversation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from scalpel_desktop.accounting.tokens import estimate_tokens
from scalpel_desktop.tools import names as tn
from scalpel_desktop.tools import skills as sk
from scalpel_desktop.wire.jsoncodec import dumps


@dataclass(frozen=True)
class Removed:
    name: str  # declared tool name, or skill__<name>
    kind: str  # "tool" | "skill"
    bytes: int  # bytes of the request body no longer sent (JSON-escaped)
    tokens: int  # estimated tokens of those characters


@dataclass
class FilterResult:
    doc: Any  # the document to send: ``doc`` itself when unchanged, else a shallow copy
    removed: list[Removed] = field(default_factory=list)
    kept: dict[str, str] = field(default_factory=dict)  # pinned name -> why it was kept
    left_alone: str = ""  # why the whole body was left alone ("" when it was not)

    @property
    def changed(self) -> bool:
        return bool(self.removed)

    @property
    def tokens(self) -> int:
        return sum(r.tokens for r in self.removed)


def filter_request(doc: Any, pinned: frozenset[str] | set[str]) -> FilterResult:
    if not pinned:
        return FilterResult(doc, left_alone="nothing pinned")
    if not isinstance(doc, dict):
        return FilterResult(doc, left_alone="not a JSON object")
    tools = doc.get("tools")
    messages = doc.get("messages")
    if tools is None:
        tools = []
    if not isinstance(tools, list) or not isinstance(messages, list):
        return FilterResult(doc, left_alone="unexpected tools or messages")
    if any(not isinstance(t, dict) for t in tools) or any(not isinstance(m, dict) for m in messages):
        return FilterResult(doc, left_alone="unexpected tool or message shape")

    tool_removals = {n for n in pinned if tn.skill_removal(n) is None}
    skill_removals = {tn.skill_removal(n) for n in pinned if tn.skill_removal(n)}

    # Candidates: declared tools covered by a pinned name.
    candidates: dict[str, str] = {}  # tool name -> the pinned removal name covering it
    kept: dict[str, str] = {}
    names_seen: set[str] = set()
    for t in tools:
        name = t.get("name")
        if not isinstance(name, str):
            if tn.is_server_tool(t):
                continue
            return FilterResult(doc, left_alone="a tool without a name")
        if name in names_seen:
            return FilterResult(doc, left_alone=f"tool {name} declared twice")
        names_seen.add(name)
        cover = next((r for r in sorted(tool_removals) if tn.covers(r, name)), None)
        if cover is None:
            continue
        if tn.is_server_tool(t):
            kept[name] = "server-side tool"
            continue
        candidates[name] = cover

    listing_idx = sk.listing_messages(messages) if skill_removals else []
    listed: set[str] = set()
    for i in listing_idx:
        for text in sk.message_texts(messages[i]):
            listed.update(sk.skill_names(text))
    skill_candidates = {s for s in skill_removals if s in listed}

    if not candidates and not skill_candidates:
        return FilterResult(doc, kept=kept)

    for name in tool_reference_names(messages):
        if name in candidates:
            del candidates[name]
            kept[name] = "referenced by a tool_reference block"

    forced = forced_tool(doc.get("tool_choice"))
    if forced in candidates:
        del candidates[forced]
        kept[forced] = "forced by tool_choice"

    prose = system_prose(doc)
    for name in sorted(candidates):
        if tn.mentioned(name, prose) or tn.mentioned(candidates[name], prose):
            del candidates[name]
            kept[name] = "named in the system prose"
    for s in sorted(skill_candidates):
        if tn.mentioned(s, prose):
            skill_candidates.discard(s)
            kept[tn.SKILL_PREFIX + s] = "named in the system prose"

    # Never remove the last remaining (non-deferred) tool.
    active = [t for t in tools if isinstance(t.get("name"), str) and t.get("defer_loading") is not True]
    if active and all(t["name"] in candidates for t in active):
        last = active[-1]["name"]
        del candidates[last]
        kept[last] = "last remaining tool"

    if not candidates and not skill_candidates:
        return FilterResult(doc, kept=kept)

    # A pending call to a name we would remove: leave the whole request alone.
    pending = pending_call_names(messages)
    hit = sorted(n for n in pending if n in candidates or (tn.skill_removal(n) or "\0") in skill_candidates)
    if hit:
        return FilterResult(doc, kept=kept, left_alone=f"last turn calls {', '.join(hit)}")

    new_doc = dict(doc)
    removed: list[Removed] = []
    if candidates:
        new_tools = []
        for t in tools:
            if t.get("name") in candidates:
                raw = dumps(t)
                removed.append(Removed(t["name"], "tool", len(raw) + 1, estimate_tokens(raw.decode("utf-8"))))  # +1: comma
            else:
                new_tools.append(t)
        new_doc["tools"] = new_tools
    if skill_candidates:
        new_messages = list(messages)
        for i in listing_idx:
            new_msg, gone = sk.strip_from_message(messages[i], frozenset(skill_candidates))
            if gone:
                new_messages[i] = new_msg
                for g, text in gone:
                    removed.append(Removed(tn.SKILL_PREFIX + g, "skill", len(dumps(text)) - 2, estimate_tokens(text)))
        new_doc["messages"] = new_messages
    if not removed:
        return FilterResult(doc, kept=kept)
    return FilterResult(new_doc, removed=removed, kept=kept)


def pending_call_names(messages: list[Any]) -> set[str]:
    """Names called by the last assistant turn (Skill calls also as ``skill__<name>``)."""
    for m in reversed(messages):
        if isinstance(m, dict) and m.get("role") == "assistant":
            return {n for _id, n in tool_uses(m)}
    return set()


def tool_uses(msg: Any) -> list[tuple[str, str]]:
    """(tool_use id, name) of each tool_use block; a Skill call adds ``skill__<skill>``."""
    out: list[tuple[str, str]] = []
    content = msg.get("content") if isinstance(msg, dict) else None
    if not isinstance(content, list):
        return out
    for b in content:
        if isinstance(b, dict) and b.get("type") in ("tool_use", "server_tool_use") and isinstance(b.get("name"), str):
            bid = b.get("id") if isinstance(b.get("id"), str) else ""
            out.append((bid, b["name"]))
            inp = b.get("input")
            if b["name"] == "Skill" and isinstance(inp, dict) and isinstance(inp.get("skill"), str):
                out.append((bid + "#skill", tn.SKILL_PREFIX + inp["skill"].lstrip("/")))
    return out


def tool_reference_names(messages: list[Any]) -> set[str]:
    """Every ``tool_name`` of a ``tool_reference`` block, at any depth of the history."""
    found: set[str] = set()

    def walk(x: Any) -> None:
        if isinstance(x, dict):
            if x.get("type") == "tool_reference" and isinstance(x.get("tool_name"), str):
                found.add(x["tool_name"])
            c = x.get("content")
            if isinstance(c, list):
                for y in c:
                    walk(y)
        elif isinstance(x, list):
            for y in x:
                walk(y)

    for m in messages:
        if isinstance(m, dict) and isinstance(m.get("content"), list):
            walk(m["content"])
    return found


def forced_tool(tool_choice: Any) -> str | None:
    if isinstance(tool_choice, dict) and tool_choice.get("type") == "tool" and isinstance(tool_choice.get("name"), str):
        return tool_choice["name"]
    return None


def system_prose(doc: dict) -> str:
    """The text the prose gate reads: top-level system, and role "system" messages after the
    first message that are not the environment snapshot; skill listings cut out."""
    parts: list[str] = []
    system = doc.get("system")
    if isinstance(system, str):
        parts.append(system)
    elif isinstance(system, list):
        parts += [b["text"] for b in system if isinstance(b, dict) and isinstance(b.get("text"), str)]
    messages = doc.get("messages") or []
    for m in messages[1:]:
        if isinstance(m, dict) and m.get("role") == "system" and not sk.is_snapshot_message(m):
            parts += sk.message_texts(m)
    out = []
    for p in parts:
        span = sk.listing_span(p)
        out.append(p if span is None else p[:span[0]] + p[span[1]:])
    return "\n".join(out)
