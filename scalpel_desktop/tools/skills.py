"""Claude Code's skill listing inside a ``role: "system"`` message.

Claude Code 2.1.x sends, in the environment message (the second message), a
section::

    The following skills are available for use with the Skill tool:

    - dataviz: Use this skill whenever ...
    - claude-api: Reference for the Claude API ...
    TRIGGER — read FIRST ...          <- continuation line of the entry above
    - init: Initialize a new CLAUDE.md file ...

    <next section>

An entry is a ``- <name>: `` line plus the non-blank lines that follow it up
to the next entry; the section ends at the first blank line after an entry.
Removing an entry drops exactly those lines, so the result depends only on
the text and the set of names removed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

SKILL_HEADER = "The following skills are available for use with the Skill tool:"
_ENTRY = re.compile(r"^- (\S+): ")

# Markers of the environment snapshot message (excluded from the prose check).
SNAPSHOT_MARKERS = (
    "# Environment\nYou have been invoked",
    SKILL_HEADER,
    "The following deferred tools are now available",
)


@dataclass(frozen=True)
class SkillEntry:
    name: str
    start: int  # character offsets of the entry's lines in the text (end includes the newline)
    end: int


def listing_span(text: str) -> tuple[int, int] | None:
    """(start, end) character span of the skill listing section, header included."""
    h = text.find(SKILL_HEADER)
    if h < 0:
        return None
    entries = parse_entries(text)
    end = entries[-1].end if entries else h + len(SKILL_HEADER)
    return h, end


def parse_entries(text: str) -> list[SkillEntry]:
    h = text.find(SKILL_HEADER)
    if h < 0:
        return []
    pos = text.find("\n", h)
    if pos < 0:
        return []
    pos += 1
    entries: list[SkillEntry] = []
    cur_name: str | None = None
    cur_start = 0
    seen_entry = False
    while pos <= len(text):
        nl = text.find("\n", pos)
        line_end = len(text) if nl < 0 else nl + 1
        line = text[pos:nl if nl >= 0 else len(text)]
        m = _ENTRY.match(line)
        if m:
            if cur_name is not None:
                entries.append(SkillEntry(cur_name, cur_start, pos))
            cur_name, cur_start, seen_entry = m.group(1), pos, True
        elif not line.strip():
            if seen_entry:
                break
        elif cur_name is None:
            break  # prose right after the header: not a listing we understand
        if nl < 0:
            pos = len(text)
            break
        pos = line_end
    if cur_name is not None:
        entries.append(SkillEntry(cur_name, cur_start, pos))
    return entries


def skill_names(text: str) -> list[str]:
    return [e.name for e in parse_entries(text)]


def remove_entries(text: str, names: set[str] | frozenset[str]) -> tuple[str, list[SkillEntry]]:
    """``text`` without the listing entries named in ``names``; and the entries removed."""
    entries = [e for e in parse_entries(text) if e.name in names]
    if not entries:
        return text, []
    out, last = [], 0
    for e in entries:
        out.append(text[last:e.start])
        last = e.end
    out.append(text[last:])
    return "".join(out), entries


def message_texts(msg: Any) -> list[str]:
    """The text of a message's content (a string, or the text blocks of a list)."""
    content = msg.get("content") if isinstance(msg, dict) else None
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        return [b["text"] for b in content if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)]
    return []


def is_snapshot_message(msg: Any) -> bool:
    """The environment snapshot: a role "system" message with the environment, skill or deferred-tool list."""
    if not isinstance(msg, dict) or msg.get("role") != "system":
        return False
    return any(marker in t for t in message_texts(msg) for marker in SNAPSHOT_MARKERS)


def listing_messages(messages: list[Any]) -> list[int]:
    """Indexes of role "system" messages holding a skill listing."""
    return [
        i for i, m in enumerate(messages)
        if isinstance(m, dict) and m.get("role") == "system" and any(SKILL_HEADER in t for t in message_texts(m))
    ]


def strip_from_message(msg: dict, names: set[str] | frozenset[str]) -> tuple[dict, list[tuple[str, str]]]:
    """A copy of ``msg`` without the named listing entries, and (name, removed text) per entry."""
    content = msg.get("content")
    if isinstance(content, str):
        new_text, entries = remove_entries(content, names)
        if not entries:
            return msg, []
        new_msg = dict(msg)
        new_msg["content"] = new_text
        return new_msg, [(e.name, content[e.start:e.end]) for e in entries]
    removed: list[tuple[str, str]] = []
    if isinstance(content, list):
        new_content = list(content)
        for j, b in enumerate(content):
            if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str):
                new_text, entries = remove_entries(b["text"], names)
                if entries:
                    nb = dict(b)
                    nb["text"] = new_text
                    new_content[j] = nb
                    removed += [(e.name, b["text"][e.start:e.end]) for e in entries]
        if removed:
            new_msg = dict(msg)
            new_msg["content"] = new_content
            return new_msg, removed
    return msg, []
