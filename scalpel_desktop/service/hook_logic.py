"""What the Claude Code hooks decide (stdlib only; called by ``hooks_entry``).

PreToolUse (Read): deny a *full* re-read of a file this agent already read in
full in this session when the file is unchanged on disk -- its content is
still in the context. Allowed: any read with offset/limit/pages, a file never
read or changed since (size, mtime or hash differ), a file edited since,
anything uncertain, and a read the proxy may have cut: the surgery log
(``cuts`` table in the ledger) is consulted for the earlier read's
tool_use_id; when the ledger or that table is absent, the answer is "allow".

PostToolUse: records, per session and agent, the hash of each file read in
full (state under ``dirs().state/hooks``); Edit/Write/MultiEdit/NotebookEdit
forget the file.

SessionStart: "clear" and "compact" forget the session's reads (the context
no longer holds them); then ``session_guard.check()``: a dead proxy is brought
back (autopilot's service), or the session is told (``systemMessage``).

Notification and SessionEnd tell the running proxy's cache keeper
(``proxy/keeper.py``, the control action ``keeper``) that Claude Code waits
for the person, or that the session ended (no more keep-alive pings for it).
No proxy, or one that does not answer within ``KEEPER_TIMEOUT_S``: nothing.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

FULL_READ_TOOLS = ("Read",)
FORGET_TOOLS = ("Edit", "Write", "MultiEdit", "NotebookEdit")
PARTIAL_KEYS = ("offset", "limit", "pages")
MAX_HASH_BYTES = 64 * 1024 * 1024
KEEPER_TIMEOUT_S = 0.5


def state_dir() -> Path:
    from scalpel_desktop.paths import dirs

    return dirs().state / "hooks"


def _session_file(session_id: str) -> Path:
    safe = "".join(c if c.isascii() and (c.isalnum() or c in "_.-") else "_" for c in session_id)[:128] or "_"
    return state_dir() / f"{safe}.json"


def _agent(payload: dict) -> str:
    agent = payload.get("agent_id") or payload.get("agentId")
    return str(agent) if agent else "main"


def _load(session_id: str) -> dict:
    try:
        doc = json.loads(_session_file(session_id).read_text(encoding="utf-8"))
        return doc if isinstance(doc, dict) else {}
    except (OSError, ValueError):
        return {}


def _save(session_id: str, doc: dict) -> None:
    from scalpel_desktop.atomicfile import write_atomic

    path = _session_file(session_id)
    write_atomic(path, json.dumps(doc).encode("utf-8"), mode=0o600, fsync=False)  # hook state: speed over durability


def file_fingerprint(path: str) -> dict | None:
    """size + mtime + sha256 of the file on disk, or None when unreadable/too big."""
    try:
        st = os.stat(path)
        if st.st_size > MAX_HASH_BYTES or not os.path.isfile(path):
            return None
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        return {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": h.hexdigest()}
    except OSError:
        return None


def _is_full_read(tool_input: dict) -> bool:
    return not any(tool_input.get(k) not in (None, "", 0) for k in PARTIAL_KEYS)


def _response_was_complete(response) -> bool:
    """Claude Code's Read result says how many lines it returned; a truncated read is not 'full'."""
    if not isinstance(response, dict):
        return False
    if response.get("type") not in (None, "text"):
        return False
    file = response.get("file")
    if not isinstance(file, dict):
        return False
    num, total = file.get("numLines"), file.get("totalLines")
    if isinstance(num, int) and isinstance(total, int):
        return num >= total
    return False


def post_tool_use(payload: dict) -> None:
    session = payload.get("session_id")
    tool = payload.get("tool_name")
    tool_input = payload.get("tool_input") or {}
    if not isinstance(session, str) or not isinstance(tool_input, dict):
        return
    path = tool_input.get("file_path") or tool_input.get("notebook_path")
    if not isinstance(path, str) or not path:
        return
    doc = _load(session)
    reads = doc.setdefault("agents", {}).setdefault(_agent(payload), {})
    if tool in FORGET_TOOLS:
        if reads.pop(path, None) is not None:
            _save(session, doc)
        return
    if tool not in FULL_READ_TOOLS:
        return
    if not _is_full_read(tool_input) or not _response_was_complete(payload.get("tool_response")):
        reads.pop(path, None)
    else:
        fp = file_fingerprint(path)
        if fp is None:
            reads.pop(path, None)
        else:
            reads[path] = {**fp, "tool_use_id": payload.get("tool_use_id"), "ts": time.time()}
    _save(session, doc)


def _maybe_cut(tool_use_id: object) -> bool:
    """True unless the surgery log proves the earlier read was NOT cut (uncertain -> True)."""
    if not isinstance(tool_use_id, str) or not tool_use_id:
        return True
    from scalpel_desktop.store.ledger_queries import cut_exists, with_ledger

    # No ledger, no surgery log table, locked or unreadable: uncertain.
    return with_ledger(True, cut_exists, tool_use_id)


def deny_reason(path: str) -> str:
    return (
        f"scalpel: {path} was already read in full earlier in this session and is unchanged on disk, "
        "so its content is still in your context: use that. If the earlier result is no longer visible "
        "to you, re-read it with an explicit offset and limit."
    )


def pre_tool_use(payload: dict) -> dict | None:
    if payload.get("tool_name") not in FULL_READ_TOOLS:
        return None
    session = payload.get("session_id")
    tool_input = payload.get("tool_input")
    if not isinstance(session, str) or not isinstance(tool_input, dict) or not _is_full_read(tool_input):
        return None
    path = tool_input.get("file_path")
    if not isinstance(path, str):
        return None
    seen = _load(session).get("agents", {}).get(_agent(payload), {}).get(path)
    if not isinstance(seen, dict):
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    if st.st_size != seen.get("size"):
        return None
    fp = file_fingerprint(path)
    if fp is None or fp["sha256"] != seen.get("sha256"):
        return None
    if _maybe_cut(seen.get("tool_use_id")):
        return None
    return {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": deny_reason(path),
        }
    }


def session_start(payload: dict) -> str | None:
    """Forget reads on clear/compact; then the base URL check (a message for the session, or None)."""
    session = payload.get("session_id")
    if isinstance(session, str) and payload.get("source") in ("clear", "compact"):
        try:
            _session_file(session).unlink()
        except OSError:
            pass
    from scalpel_desktop.service import session_guard

    return session_guard.check()


def keeper_event(payload: dict, event: str) -> None:
    """Tell the running proxy's cache keeper ``event`` ("waiting" | "end") for the payload's session."""
    session = payload.get("session_id")
    if not isinstance(session, str) or not session:
        return
    from scalpel_desktop.control_client import ControlClient, ControlError

    try:
        ControlClient.discover(timeout=KEEPER_TIMEOUT_S).action("keeper", {"event": event, "session": session})
    except (ControlError, OSError, ValueError):
        pass  # no proxy, an older one, or a slow one: the keeper's own timers still end
