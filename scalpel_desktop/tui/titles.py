"""Session titles from Claude Code's own transcripts on disk, never from the ledger.

The ledger stores no content, and a session's first prompt is content, so the
dashboard does not title sessions from what passed through the proxy. Claude
Code itself writes a short title into the session's transcript
(``$CLAUDE_CONFIG_DIR/projects/<slug>/<session>.jsonl``): ``summary`` lines
(``{"type":"summary","summary":"..."}``) and, when the user named the session,
a ``custom-title`` line. This module reads the head and the tail of that file
(64 KB each: those lines sit at either end) and keeps the last title found.
No transcript, no title: the session is then named by its project alone.

Blocking file I/O: the dashboard calls it from its thread workers only.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

CHUNK = 64 * 1024
TITLE_MAX = 80


def transcript_index(roots: list[Path] | None = None) -> dict[str, Path]:
    """session id -> its main transcript file, for every project dir under ``roots``."""
    if roots is None:
        from scalpel_desktop.paths import claude_projects_dirs

        roots = claude_projects_dirs()
    out: dict[str, Path] = {}
    for root in roots:
        try:
            projects = sorted(p for p in root.iterdir() if p.is_dir())
        except OSError:
            continue
        for project in projects:
            try:
                for f in project.iterdir():
                    if f.suffix == ".jsonl" and not f.name.startswith("agent-"):
                        out.setdefault(f.stem, f)
            except OSError:
                continue
    return out


def title_of(path: Path) -> str:
    """The last title Claude Code wrote into ``path`` ("" when none or unreadable)."""
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as fh:
            head = fh.read(CHUNK)
            tail = b""
            if size > CHUNK:
                fh.seek(max(CHUNK, size - CHUNK))
                tail = fh.read(CHUNK)
    except OSError:
        return ""
    title = ""
    for chunk in (head, tail):
        for line in chunk.split(b"\n"):
            if b'"summary"' not in line and b'"custom-title"' not in line:
                continue
            try:
                doc = json.loads(line)
            except ValueError:
                continue  # a line cut at the chunk's edge
            if not isinstance(doc, dict):
                continue
            if doc.get("type") == "summary" and isinstance(doc.get("summary"), str):
                title = doc["summary"]
            elif doc.get("type") == "custom-title" and isinstance(doc.get("customTitle"), str):
                title = doc["customTitle"]
    title = " ".join(title.split())
    return title[:TITLE_MAX]


def titles(sessions: list[str], roots: list[Path] | None = None) -> dict[str, str]:
    """session -> title, for the sessions that have a transcript with one."""
    index = transcript_index(roots)
    out = {}
    for s in sessions:
        path = index.get(s)
        if path is not None:
            t = title_of(path)
            if t:
                out[s] = t
    return out
