"""Synthetic Claude Code transcripts for exact reader and bench cases."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

T0 = 1_760_000_000.0


def iso(t: float) -> str:
    return datetime.fromtimestamp(t, tz=timezone.utc).isoformat().replace("+00:00", "Z")


def usage(read: int = 0, w5: int = 0, w1: int = 0, inp: int = 3, out: int = 50) -> dict:
    return {"input_tokens": inp, "cache_creation_input_tokens": w5 + w1, "cache_read_input_tokens": read,
            "output_tokens": out, "cache_creation": {"ephemeral_5m_input_tokens": w5, "ephemeral_1h_input_tokens": w1}}


class Transcript:
    """Appends transcript lines the way Claude Code writes them."""

    def __init__(self, session: str = "11111111-2222-4333-8444-555555555555", version: str = "2.0.50",
                 model: str = "claude-sonnet-4-5-20250929", sidechain: bool = False, agent: str | None = None):
        self.session = session
        self.version = version
        self.model = model
        self.sidechain = sidechain
        self.agent = agent
        self.lines: list[str] = []
        self.last: str | None = None
        self.n = 0
        self.t = T0
        self.req = 0

    def _uuid(self) -> str:
        self.n += 1
        return f"{'s' if self.sidechain else 'm'}{self.n:07d}-0000-4000-8000-000000000000"

    def raw(self, text: str) -> None:
        self.lines.append(text)

    def _line(self, kind: str, message: dict | None, parent: str | None = "AUTO", **extra) -> str:
        uid = self._uuid()
        rec = {"parentUuid": self.last if parent == "AUTO" else parent, "isSidechain": self.sidechain,
               "type": kind, "uuid": uid, "timestamp": iso(self.t), "sessionId": self.session,
               "version": self.version, "cwd": "/home/u/proj", "userType": "external"}
        if self.agent:
            rec["agentId"] = self.agent
        if message is not None:
            rec["message"] = message
        rec.update(extra)
        self.lines.append(json.dumps(rec))
        self.last = uid
        return uid

    def user(self, content, dt: float = 1.0, parent: str | None = "AUTO", **extra) -> str:
        self.t += dt
        return self._line("user", {"role": "user", "content": content}, parent, **extra)

    def result(self, tool_id: str, content: str, dt: float = 1.0, is_error: bool | None = None) -> str:
        block = {"tool_use_id": tool_id, "type": "tool_result", "content": content}
        if is_error is not None:
            block["is_error"] = is_error
        return self.user([block], dt)

    def response(self, blocks: list[dict], use: dict, dt: float = 2.0, model: str | None = None) -> list[str]:
        """One API response split over one line per content block (same ids, same usage)."""
        self.req += 1
        self.t += dt
        tag = f"{self.session[:4]}{'s' if self.sidechain else 'm'}{self.agent or ''}{self.req:04d}"
        mid, rid = "msg_" + tag, "req_" + tag
        out = []
        for b in blocks:
            msg = {"id": mid, "type": "message", "role": "assistant", "model": model or self.model,
                   "content": [b], "usage": use}
            out.append(self._line("assistant", msg, requestId=rid))
        return out

    def noise(self) -> None:
        """Non-message lines Claude Code mixes in."""
        self.lines.append(json.dumps({"type": "file-history-snapshot", "messageId": "x", "snapshot": {}}))
        self.lines.append(json.dumps({"type": "queue-operation", "operation": "enqueue", "timestamp": iso(self.t)}))
        self.lines.append(json.dumps({"type": "summary", "summary": "A title", "leafUuid": self.last}))

    def compact(self, summary: str) -> str:
        self.t += 1
        self._line("system", None, parent=None, subtype="compact_boundary", logicalParentUuid=self.last)
        return self.user(summary, 0.1, isCompactSummary=True)

    def write(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(self.lines) + "\n", encoding="utf-8")
        return path


def tool_use(tid: str, name: str = "Read", **inp) -> dict:
    return {"type": "tool_use", "id": tid, "name": name, "input": inp or {"file_path": "/home/u/proj/a.py"}}


def text(s: str) -> dict:
    return {"type": "text", "text": s}


def simple_session(path: Path, turns: int = 6, gap_at: int | None = None, gap: float = 600.0,
                   big: int = 20_000) -> Path:
    """A linear session: read a big file, re-read it, edit it...; usage consistent with the content
    (a gap past the 5-minute TTL reads nothing and writes the whole prompt)."""
    tr = Transcript()
    tr.user("Please fix a.py")
    prompt = 15_000
    tr.response([text("Reading."), tool_use("toolu_0")], usage(w5=prompt))
    for k in range(1, turns):
        content = ("x = 1\n" * (big // 6)) if k % 2 else "ok"
        cold = gap_at == k and gap > 300
        tr.result(f"toolu_{k - 1}", content, dt=gap if gap_at == k else 1.0)
        grow = len(content) // 3 + 40
        use = usage(w5=prompt + grow) if cold else usage(read=prompt, w5=grow)
        tr.response([tool_use(f"toolu_{k}", "Read" if k % 3 else "Edit", file_path="/home/u/proj/a.py",
                              old_string="a", new_string="b")], use)
        prompt += grow
    return tr.write(path)
