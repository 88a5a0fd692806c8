"""Request bodies: the real Claude Code 2.1.332 capture, grown to a size.

The longest main-thread request of ``../shared/corpus/wire/claude-code-2.1.332``
is grown by appending the capture's own tool_use / tool_result pairs again, in
order, with fresh tool ids (``growth = "real"``: the results are small, about
300 B, so these bodies hold many messages and per-message work shows), or by
Read calls answered with 400-line synthetic files of about 30 KB each
(``growth = "reads"``, as the earlier benchmark grew them), or by the same
Reads of 60 files in turn, each read again with new lines once the first 60
are in (``growth = "rereads"``: every later turn supersedes an earlier read,
as a session that edits and re-reads its files does). A first-sighting copy
is the same body under another session id and other tool ids.
"""

from __future__ import annotations

import copy
import json
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CAPTURE = REPO.parent / "shared" / "corpus" / "wire" / "claude-code-2.1.332" / "requests.jsonl"


def compact(obj) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def load_capture() -> tuple[dict, dict, list[tuple[dict, dict]]]:
    """(the longest main-thread body, its headers, every real tool_use/tool_result pair)."""
    rows = [json.loads(line) for line in CAPTURE.read_text(encoding="utf-8").splitlines() if line.strip()]
    main = [r for r in rows if r["run"] == "main" and "x-claude-code-agent-id" not in r["headers"]]
    row = max(main, key=lambda r: len(r["body"]["messages"]))
    uses: dict[str, dict] = {}
    pairs: dict[str, tuple[dict, dict]] = {}
    for r in rows:
        for m in r["body"]["messages"]:
            for block in m["content"] if isinstance(m["content"], list) else []:
                if block.get("type") == "tool_use":
                    uses[block["id"]] = block
                elif block.get("type") == "tool_result" and block["tool_use_id"] in uses:
                    pairs.setdefault(block["tool_use_id"], (uses[block["tool_use_id"]], block))
    headers = {k: v for k, v in row["headers"].items() if k not in ("host", "content-length", "connection")}
    headers["x-api-key"] = "sk-ant-bench-dummy"
    return row["body"], headers, list(pairs.values())


class Conversation:
    """A Claude Code 2.1.332 conversation of about ``size`` bytes, with its own session
    id and tool ids, that grows by one real tool_use/tool_result pair per turn."""

    growth = "real"  # or "reads": Read calls of 400-line files, as the earlier benchmark grew them; "rereads"
    REREAD_FILES = 60

    def __init__(self, capture, size: int, tag: str):
        base, headers, self.pairs = capture
        self.session = str(uuid.uuid4())
        old = headers.get("x-claude-code-session-id", "")
        self.headers = dict(headers, **{"x-claude-code-session-id": self.session})
        self.doc = copy.deepcopy(base)
        meta = self.doc.get("metadata") or {}
        if old and isinstance(meta.get("user_id"), str):
            meta["user_id"] = meta["user_id"].replace(old, self.session)
        self.doc["stream"] = True
        self.tag, self.turns, self.size = tag, 0, len(compact(self.doc))
        while self.size < size:
            self.size += self.add_turn()

    def add_turn(self) -> int:
        tid = f"toolu_01{self.tag}{self.turns:08d}"
        if self.growth in ("reads", "rereads"):
            n = self.turns % self.REREAD_FILES if self.growth == "rereads" else self.turns
            path = f"/home/user/proj/src/mod{n}.py"
            use = {"type": "tool_use", "id": tid, "name": "Read", "input": {"file_path": path}}
            result = {"tool_use_id": tid, "type": "tool_result", "content": "\n".join(
                f"{i + 1:>6}\u2192    value_{self.turns}_{i} = compute(value_{self.turns}_{i - 1}, {i}) # step {i}"
                for i in range(400))}
        else:
            use, result = self.pairs[self.turns % len(self.pairs)]
        self.turns += 1
        turn = [{"role": "assistant", "content": [dict(use, id=tid)]},
                {"role": "user", "content": [dict(result, tool_use_id=tid)]}]
        self.doc["messages"].extend(turn)
        return len(compact(turn))  # about: one "," more

    def body(self) -> bytes:
        return compact(self.doc)


def first_sighting(body: bytes, conv: Conversation, n: int) -> tuple[bytes, dict]:
    """``conv``'s body as a conversation never seen: another session id, other tool ids."""
    session = str(uuid.uuid4())
    tag = f"{n:06d}"
    out = body.replace(conv.session.encode(), session.encode()).replace(
        f"toolu_01{conv.tag}".encode(), f"toolu_01{tag}".encode())
    return out, dict(conv.headers, **{"x-claude-code-session-id": session})
