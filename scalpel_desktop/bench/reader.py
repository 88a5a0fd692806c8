"""Read Claude Code transcripts back into the API requests they stand for.

A transcript (``<projects>/<cwd slug>/<session>.jsonl``) is a log of lines,
not of requests. This module rebuilds, for every API request that was
actually billed, the history that was sent, its time, its model and its real
usage counts:

* one API response is split over several ``assistant`` lines (one per content
  block) that share ``requestId`` / ``message.id`` and repeat the usage: it is
  ONE request;
* the history of a request is the chain of ``parentUuid`` links from the
  response's first line back to a root (``parentUuid: null``): a compaction
  boundary is such a root, so the history restarts there, and a rewound branch
  keeps only its own ancestors;
* newer versions chain parallel tool results to sibling lines, so a walk can
  miss one: results of a tool_use in the history that the walk missed are put
  back from the file, as Claude Code itself does;
* non-message lines (progress, snapshots, queue operations, summaries,
  attachments, system notes) only serve as chain links; synthetic error
  messages are neither requests nor history;
* inline sidechains (``isSidechain: true``) and subagent files
  (``<session>/subagents/agent-*.jsonl``, old-style ``agent-*.jsonl``) are
  sequences of their own (their own cache conversation);
* a line that does not parse is counted and skipped, never fatal.

Transcripts hold no system prompt and no tool declarations; the simulation
infers their size from the first request's usage (``bench/simulate.py``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Iterable, Iterator

from scalpel_desktop.wire.usage import Usage
from scalpel_desktop.wire.jsoncodec import loads

MAX_FILE_BYTES_DEFAULT = 64 * 1024 * 1024


@dataclass
class Line:
    """One message line of a transcript, kept for history rebuilding."""

    index: int  # line number in the file (0-based), the file order
    role: str  # "user" | "assistant"
    blocks: list  # content blocks (a string content becomes one text block)
    ts: float
    msg_id: str | None = None
    string_content: bool = False
    compact_summary: bool = False  # the summary a compaction starts the history with (``isCompactSummary``)


@dataclass
class Request:
    """One billed API request, as rebuilt from a transcript."""

    request_id: str
    ts: float  # when it was sent (time of the last history line)
    ts_done: float  # when its response ended (time of its last line)
    model: str
    usage: Usage
    history: list[Line]  # the lines sent, in prefix order
    response: list[Line]  # the response's own lines (content the model produced)
    version: str = ""

    @property
    def messages(self) -> list[dict]:
        """The history as Anthropic Messages (consecutive same-role lines merged)."""
        return to_messages(self.history)


@dataclass
class Sequence:
    """One conversation with its own cache: a main thread, a sidechain or a subagent file."""

    path: Path
    session_id: str
    agent_id: str | None
    kind: str  # "main" | "sidechain" | "subagent"
    requests: list[Request] = field(default_factory=list)

    @property
    def name(self) -> str:
        tail = self.agent_id or self.kind
        return f"{self.session_id[:8]}/{tail}"


@dataclass
class FileResult:
    path: Path
    sequences: list[Sequence]
    lines: int = 0
    bad_lines: int = 0
    skipped: str | None = None  # reason when the whole file was skipped (oversized, unreadable)


def find_sessions(root: Path | None = None) -> list[Path]:
    """Every transcript file under ``root`` (default: Claude Code's projects dirs), sorted."""
    if root is None:
        from scalpel_desktop.paths import claude_projects_dirs

        roots = claude_projects_dirs()
    else:
        roots = [Path(root)]
    out: list[Path] = []
    for r in roots:
        if r.is_file():
            out.append(r)
            continue
        for dirpath, dirnames, filenames in os.walk(r):
            dirnames.sort()
            for name in sorted(filenames):
                if name.endswith(".jsonl"):
                    out.append(Path(dirpath) / name)
    return sorted(set(out), key=lambda p: str(p))


def read_corpus(root: Path | None = None, max_bytes: int = MAX_FILE_BYTES_DEFAULT) -> list[FileResult]:
    return [read_file(p, max_bytes=max_bytes) for p in find_sessions(root)]


def iter_sequences(results: Iterable[FileResult]) -> Iterator[Sequence]:
    for fr in results:
        yield from fr.sequences


def parse_ts(value: Any) -> float | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _blocks_of(content: Any) -> tuple[list, bool]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}], True
    if isinstance(content, list):
        return [b for b in content if isinstance(b, dict)], False
    return [], False


def _is_subagent_file(path: Path) -> bool:
    return path.name.startswith("agent-") or path.parent.name == "subagents"


def read_file(path: Path, max_bytes: int = MAX_FILE_BYTES_DEFAULT) -> FileResult:
    """Rebuild every request of one transcript file (robust: never raises on content)."""
    path = Path(path)
    try:
        size = path.stat().st_size
        if size > max_bytes:
            return FileResult(path, [], skipped="oversized")
        raw = path.read_bytes()
    except OSError:
        return FileResult(path, [], skipped="unreadable")
    parents: dict[str, str | None] = {}
    sidechain: dict[str, bool] = {}
    msg_at: dict[str, Line] = {}  # uuid -> message line
    assistant_lines: list[tuple[str, dict, Line]] = []  # (uuid, record, line) in file order
    result_line_of: dict[str, tuple[str, Line]] = {}  # tool_use_id -> (uuid, user line)
    file_meta = {"session": "", "agent": None, "version": ""}
    bad = 0
    n = 0
    for index, text in enumerate(raw.split(b"\n")):
        if not text.strip():
            continue
        n += 1
        try:
            rec = loads(text)
        except Exception:  # noqa: BLE001 - a broken line is counted, never fatal
            bad += 1
            continue
        if not isinstance(rec, dict):
            bad += 1
            continue
        uuid = rec.get("uuid")
        if not isinstance(uuid, str):
            continue
        parent = rec.get("parentUuid")
        parents[uuid] = parent if isinstance(parent, str) else None
        sidechain[uuid] = bool(rec.get("isSidechain"))
        if not file_meta["session"] and isinstance(rec.get("sessionId"), str):
            file_meta["session"] = rec["sessionId"]
        if file_meta["agent"] is None and isinstance(rec.get("agentId"), str):
            file_meta["agent"] = rec["agentId"]
        if isinstance(rec.get("version"), str):
            file_meta["version"] = rec["version"]
        kind = rec.get("type")
        msg = rec.get("message")
        if kind not in ("user", "assistant") or not isinstance(msg, dict):
            continue
        if kind == "assistant" and (msg.get("model") == "<synthetic>" or rec.get("isApiErrorMessage")):
            continue
        blocks, was_string = _blocks_of(msg.get("content"))
        ts = parse_ts(rec.get("timestamp"))
        line = Line(index, kind, blocks, ts if ts is not None else 0.0, msg.get("id") if kind == "assistant" else None,
                    was_string, rec.get("isCompactSummary") is True)
        msg_at[uuid] = line
        if kind == "assistant":
            assistant_lines.append((uuid, rec, line))
        else:
            for b in blocks:
                if b.get("type") == "tool_result" and isinstance(b.get("tool_use_id"), str):
                    result_line_of.setdefault(b["tool_use_id"], (uuid, line))
    sequences = _build_requests(path, parents, sidechain, msg_at, assistant_lines, result_line_of, file_meta)
    return FileResult(path, sequences, lines=n, bad_lines=bad)


def _build_requests(path, parents, sidechain, msg_at, assistant_lines, result_line_of, meta) -> list[Sequence]:
    # Group the split lines of one response.
    groups: dict[str, list[tuple[str, dict, Line]]] = {}
    order: list[str] = []
    for uuid, rec, line in assistant_lines:
        msg = rec["message"]
        key = rec.get("requestId") or msg.get("id") or uuid
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append((uuid, rec, line))
    subagent_file = _is_subagent_file(path)
    seqs: dict[str, Sequence] = {}
    root_cache: dict[str, str] = {}
    for key in order:
        lines = groups[key]
        first_uuid, first_rec, first_line = lines[0]
        usage_rec = max((r["message"].get("usage") or {} for _, r, _ in lines), key=lambda u: u.get("output_tokens", 0) if isinstance(u, dict) else 0)
        if not isinstance(usage_rec, dict) or not usage_rec:
            continue  # not billed as far as we can tell (no usage): not a request we can price
        history_uuids, root = _ancestors(parents, first_uuid, root_cache)
        history = [msg_at[u] for u in history_uuids if u in msg_at]
        history = _restore_parallel_results(history, result_line_of, first_line.index)
        if subagent_file:
            seq_key, kind = "file", "subagent"
        elif sidechain.get(first_uuid):
            seq_key, kind = "side:" + root, "sidechain"
        else:
            seq_key, kind = "main", "main"
        seq = seqs.get(seq_key)
        if seq is None:
            agent = first_rec.get("agentId") if isinstance(first_rec.get("agentId"), str) else None
            if kind == "subagent" and agent is None:
                agent = path.stem
            if kind == "sidechain" and agent is None:
                agent = "side-" + root[:8]
            seq = seqs[seq_key] = Sequence(path, meta["session"] or path.stem, agent, kind)
        response = [ln for _, _, ln in lines]
        ts_sent = history[-1].ts if history else first_line.ts
        seq.requests.append(
            Request(
                request_id=key,
                ts=min(ts_sent, first_line.ts) if ts_sent else first_line.ts,
                ts_done=max(ln.ts for ln in response),
                model=str(first_rec["message"].get("model") or ""),
                usage=Usage.from_anthropic(usage_rec),
                history=history,
                response=response,
                version=str(first_rec.get("version") or meta["version"]),
            )
        )
    return [seqs[k] for k in sorted(seqs, key=lambda k: seqs[k].requests[0].response[0].index)]


def _ancestors(parents: dict[str, str | None], start: str, root_cache: dict[str, str]) -> tuple[list[str], str]:
    """The uuids before ``start`` on its chain, root first, and the chain's root."""
    chain: list[str] = []
    seen = {start}
    cur = parents.get(start)
    root = start
    while cur is not None and cur not in seen:
        seen.add(cur)
        chain.append(cur)
        root = cur
        cur = parents.get(cur)
    chain.reverse()
    return chain, root


def _restore_parallel_results(history: list[Line], result_line_of, before: int) -> list[Line]:
    """Put back tool results the parentUuid walk missed (parallel results chained to siblings)."""
    answered = set()
    asked: list[tuple[int, str]] = []
    for pos, ln in enumerate(history):
        for b in ln.blocks:
            t = b.get("type")
            if t == "tool_result":
                answered.add(b.get("tool_use_id"))
            elif t == "tool_use" and ln.role == "assistant":
                asked.append((pos, b.get("id")))
    missing = [(pos, tid) for pos, tid in asked if tid not in answered and tid in result_line_of]
    if not missing:
        return history
    present = {id(ln) for ln in history}
    inserts: dict[int, list[Line]] = {}
    for pos, tid in missing:
        ln = result_line_of[tid][1]
        if ln.index >= before or id(ln) in present:
            continue
        present.add(id(ln))
        # after the last assistant line of this message (before the next user line)
        end = pos
        while end + 1 < len(history) and history[end + 1].role == "assistant":
            end += 1
        inserts.setdefault(end, []).append(ln)
    if not inserts:
        return history
    out: list[Line] = []
    for pos, ln in enumerate(history):
        out.append(ln)
        if pos in inserts:
            out.extend(sorted(inserts[pos], key=lambda x: x.index))
    return out


def to_messages(history: list[Line]) -> list[dict]:
    """Anthropic Messages from history lines: consecutive same-role lines become one message."""
    out: list[dict] = []
    for ln in history:
        if out and out[-1]["role"] == ln.role:
            out[-1]["content"].extend(ln.blocks)
        else:
            out.append({"role": ln.role, "content": list(ln.blocks)})
    return out
