"""Randomized Claude Code shaped agent sessions for the invariant tests.

``generate(rnd)`` builds one session of 40+ main turns as the exact request
bodies Claude Code would send, with their send and response-end times. Every
session holds each feature the invariants must survive (the tests check the
generated requests, not this plan): reads, edits, re-reads, failed commands,
parallel tool calls, a subagent, side requests to a small model, idle gaps
shorter and longer than the TTL, a model switch and an auto-compaction.

The bodies follow SPEC section 4: a billing-header system block then two
cached system blocks, tools, ``role: "system"`` messages inside ``messages``,
thinking blocks with signatures, the cache marker on the last block of the
last message (a string last message becomes a block list and turns back), the
session id in ``metadata.user_id`` and in the headers, the agent id header for
subagents. The client always sends its ORIGINAL history: the proxy's cuts are
its own business.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import Any

MAIN_MODELS = ("claude-opus-4-5", "claude-sonnet-4-5")
SIDE_MODEL = "claude-haiku-4-5"
BETA = "claude-code-20250219,interleaved-thinking-2025-05-14,context-management-2025-06-27"
WORDS = ("def", "return", "self", "import", "value", "for", "in", "if", "else", "data", "result",
         "config", "parse", "token", "cache", "class", "with", "yield", "raise", "async")
TTL_S = {"5m": 300.0, "1h": 3600.0}


@dataclass
class Request:
    headers: dict[str, str]
    body: dict[str, Any]
    at: float  # when it is sent
    end: float  # when its response ends
    model: str
    role: str  # main | subagent | side | compact
    agent: str = ""


@dataclass
class Session:
    session_id: str
    ttl: str
    requests: list[Request] = field(default_factory=list)


def _text(rnd: random.Random, chars: int) -> str:
    out: list[str] = []
    n = 0
    line = 1
    while n < chars:
        s = f"{line:>6}\u2192" + " ".join(rnd.choice(WORDS) for _ in range(rnd.randrange(4, 12)))
        out.append(s)
        n += len(s) + 1
        line += 1
    return "\n".join(out)


def _tools(rnd: random.Random) -> list[dict]:
    names = ["Agent", "Bash", "Edit", "Glob", "Grep", "Read", "Write", "TodoWrite", "WebFetch", "WebSearch",
             "NotebookEdit", "ToolSearch"]
    tools = []
    for name in names:
        tools.append({
            "name": name,
            "description": f"{name}: " + " ".join(rnd.choice(WORDS) for _ in range(180)),
            "input_schema": {"type": "object", "properties": {
                "file_path": {"type": "string", "description": "The absolute path"},
                "command": {"type": "string"}}, "additionalProperties": False},
        })
    return tools


def _system(rnd: random.Random, ttl: str, variant: str = "") -> list[dict]:
    cc: dict[str, Any] = {"type": "ephemeral"}
    if ttl == "1h":
        cc["ttl"] = "1h"
    return [
        {"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.332.1ca; cc_entrypoint=sdk-cli;"},
        {"type": "text", "text": "You are a Claude agent, built on Anthropic's Claude Agent SDK." + variant,
         "cache_control": dict(cc)},
        {"type": "text", "text": "# Harness\n" + " ".join(rnd.choice(WORDS) for _ in range(4000)),
         "cache_control": dict(cc)},
    ]


class _Conversation:
    """One message history (main thread or a subagent) and how to send it."""

    def __init__(self, session: "_Builder", agent: str, prompt: str):
        self.s = session
        self.agent = agent
        self.messages: list[dict] = [{"role": "user", "content": [{"type": "text", "text": prompt}]}]
        if not agent:
            self.messages.append({"role": "system", "content": (
                "# Environment\n - Primary working directory: /home/user/proj\n - Platform: linux\n")})

    def body(self, model: str, extra_user: str | None = None) -> dict:
        msgs = list(self.messages)
        if extra_user is not None:
            msgs.append({"role": "user", "content": extra_user})
        last = dict(msgs[-1])
        content = last["content"]
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        content = list(content)
        blk = dict(content[-1])
        cc: dict[str, Any] = {"type": "ephemeral"}
        if self.s.ttl == "1h":
            cc["ttl"] = "1h"
        blk["cache_control"] = cc
        content[-1] = blk
        last["content"] = content
        msgs[-1] = last
        return {
            "model": model,
            "messages": msgs,
            "system": self.s.system,
            "tools": self.s.tools,
            "metadata": {"user_id": json.dumps({"device_id": "d" * 16, "account_uuid": "",
                                                "session_id": self.s.session_id}, separators=(",", ":"))},
            "max_tokens": 32000,
            "thinking": {"type": "adaptive"},
            "stream": True,
        }

    def headers(self) -> dict[str, str]:
        h = {"anthropic-version": "2023-06-01", "anthropic-beta": BETA, "content-type": "application/json",
             "x-claude-code-session-id": self.s.session_id, "user-agent": "claude-cli/2.1.332 (external, sdk-cli)"}
        if self.agent:
            h["x-claude-code-agent-id"] = self.agent
        return h


class _Builder:
    def __init__(self, rnd: random.Random, ttl: str):
        self.rnd = rnd
        self.ttl = ttl
        self.session_id = "%08x-0000-4000-8000-%012x" % (rnd.getrandbits(32), rnd.getrandbits(48))
        self.tools = _tools(rnd)
        self.system = _system(rnd, ttl)
        self.side_system = [{"type": "text", "text": "Generate a short title. " + " ".join(rnd.choice(WORDS) for _ in range(30))}]
        self.t = 1_000_000.0 + rnd.randrange(10_000)
        self.files: dict[str, str] = {}
        self.out = Session(self.session_id, ttl)
        self.ids = 0

    def tool_id(self) -> str:
        self.ids += 1
        return "toolu_%016x%06d" % (self.rnd.getrandbits(64), self.ids)

    def send(self, conv: _Conversation, model: str, role: str, extra_user: str | None = None,
             body: dict | None = None) -> None:
        end = self.t + self.rnd.uniform(2.0, 15.0)
        self.out.requests.append(Request(conv.headers(), body or conv.body(model, extra_user), self.t, end,
                                         model, role, conv.agent))
        self.t = end

    def gap(self, long: bool = False) -> None:
        if long:
            ttl = TTL_S[self.ttl]
            self.t += self.rnd.uniform(ttl + 60, ttl * 3)
        else:
            self.t += self.rnd.uniform(1.0, 40.0)

    # -- tool calls and their results --------------------------------------
    def file_content(self, path: str) -> str:
        if path not in self.files:
            self.files[path] = _text(self.rnd, self.rnd.randrange(2_000, 10_000))
        return self.files[path]

    def call(self, kind: str, path: str) -> tuple[dict, dict]:
        tid = self.tool_id()
        rnd = self.rnd
        if kind == "read":
            use = {"type": "tool_use", "id": tid, "name": "Read", "input": {"file_path": path}}
            res: dict[str, Any] = {"tool_use_id": tid, "type": "tool_result", "content": self.file_content(path)}
        elif kind == "edit":
            use = {"type": "tool_use", "id": tid, "name": "Edit",
                   "input": {"file_path": path, "old_string": "a", "new_string": "b"}}
            text = self.file_content(path)
            self.files[path] = text + "\n" + _text(rnd, 200)
            res = {"type": "tool_result", "tool_use_id": tid, "content": f"The file {path} has been updated."}
        elif kind == "fail":
            use = {"type": "tool_use", "id": tid, "name": "Bash", "input": {"command": "pytest -x"}}
            res = {"type": "tool_result", "content": "Exit code 1\n" + _text(rnd, rnd.randrange(1_000, 4_000)),
                   "is_error": True, "tool_use_id": tid}
        else:  # bash / grep
            use = {"type": "tool_use", "id": tid, "name": "Bash", "input": {"command": f"ls -la {path}"}}
            res = {"tool_use_id": tid, "type": "tool_result", "content": _text(rnd, rnd.randrange(300, 3_000)),
                   "is_error": False}
        return use, res

    def turn(self, conv: _Conversation, calls: list[tuple[str, str]]) -> None:
        uses, results = [], []
        for kind, path in calls:
            u, r = self.call(kind, path)
            uses.append(u)
            results.append(r)
        assistant: list[dict] = [{"type": "thinking", "thinking": "", "signature": "c2ln" + "A" * 40}]
        if self.rnd.random() < 0.5:
            assistant.append({"type": "text", "text": "Let me look. " + " ".join(self.rnd.choice(WORDS) for _ in range(20))})
        conv.messages.append({"role": "assistant", "content": assistant + uses})
        conv.messages.append({"role": "user", "content": results})

    def random_calls(self) -> list[tuple[str, str]]:
        rnd = self.rnd
        paths = [f"/home/user/proj/src/m{i}.py" for i in range(8)]
        n = 1 if rnd.random() < 0.6 else rnd.randrange(2, 4)
        out = []
        for _ in range(n):
            x = rnd.random()
            known = list(self.files)
            if x < 0.45:
                out.append(("read", rnd.choice(known) if known and rnd.random() < 0.4 else rnd.choice(paths)))
            elif x < 0.65 and known:
                out.append(("edit", rnd.choice(known)))
            elif x < 0.75:
                out.append(("fail", "tests"))
            else:
                out.append(("bash", rnd.choice(paths)))
        return out


def generate(rnd: random.Random, main_turns: int | None = None, ttl: str | None = None) -> Session:
    """One session; see the module docstring."""
    ttl = ttl or rnd.choice(("5m", "1h"))
    b = _Builder(rnd, ttl)
    turns = main_turns or rnd.randrange(40, 56)
    main = _Conversation(b, "", "Fix the failing tests in src/ and explain. " + _text(rnd, 400))
    model = MAIN_MODELS[0]
    # Forced placements (each session holds every feature).
    switch_at = rnd.randrange(12, turns - 8)
    switch_back_at = switch_at + rnd.randrange(2, 6)
    compact_at = rnd.randrange(turns // 2, turns - 4)
    long_gaps = sorted(rnd.sample(range(6, turns - 1), k=rnd.randrange(2, 5)))
    subagent_at = rnd.randrange(5, turns - 10)
    side_at = {1, rnd.randrange(20, turns)}
    reread_at = rnd.randrange(3, 10)
    fail_at = rnd.randrange(2, 12)
    parallel_at = rnd.randrange(2, 12)
    for t in range(turns):
        if t == switch_at:
            model = MAIN_MODELS[1]
        elif t == switch_back_at:
            model = MAIN_MODELS[0]
        if t == 0:
            calls = [("read", "/home/user/proj/src/m0.py"), ("read", "/home/user/proj/src/m1.py")]
        elif t == reread_at:
            calls = [("read", "/home/user/proj/src/m0.py")]
        elif t == reread_at + 1:
            calls = [("edit", "/home/user/proj/src/m1.py")]
        elif t == fail_at:
            calls = [("fail", "tests")]
        elif t == parallel_at:
            calls = [("read", "/home/user/proj/src/m2.py"), ("bash", "/home/user/proj/src/m3.py")]
        else:
            calls = b.random_calls()
        b.send(main, model, "main")
        if t in side_at:
            b.gap()
            side = _Conversation(b, "", "Title for: fix the failing tests")
            body = side.body(SIDE_MODEL)
            body["system"] = b.side_system
            body["tools"] = []
            b.send(side, SIDE_MODEL, "side", body=body)
        b.turn(main, calls)
        if t == subagent_at:
            _subagent(b, model)
        if t == compact_at:
            b.gap()
            b.send(main, model, "compact", extra_user="Summarize this conversation for a continuation.")
            summary = "This session is being continued from a previous conversation. Summary: " + _text(rnd, 3_000)
            main.messages = [{"role": "user", "content": summary},
                             {"role": "system", "content": "# Environment\n - Primary working directory: /home/user/proj\n"}]
            b.turn(main, b.random_calls())
        b.gap(long=t in long_gaps)
    b.send(main, model, "main")
    return b.out


def _subagent(b: _Builder, model: str) -> None:
    agent = "a%016x" % b.rnd.getrandbits(64)
    conv = _Conversation(b, agent, "Investigate the parser module and report.")
    tid = b.tool_id()
    for _ in range(b.rnd.randrange(3, 7)):
        b.gap()
        b.send(conv, model, "subagent")
        b.turn(conv, b.random_calls())
    b.send(conv, model, "subagent")
    del tid


# -- what a session really holds (checked on the generated requests) ----------

def features(session: Session) -> set[str]:
    found: set[str] = set()
    main = [r for r in session.requests if r.role in ("main", "compact")]
    if len(main) >= 40:
        found.add("40+ turns")
    reads: dict[str, int] = {}
    for r in session.requests:
        if r.agent:
            found.add("subagent")
        if r.model == SIDE_MODEL:
            found.add("side request")
    models = {r.model for r in main}
    if len(models) >= 2:
        found.add("model switch")
    read_ids: dict[str, str] = {}
    for r in main:
        for m in r.body["messages"]:
            c = m.get("content")
            if not isinstance(c, list):
                continue
            uses = [x for x in c if isinstance(x, dict) and x.get("type") == "tool_use"]
            if len(uses) >= 2:
                found.add("parallel calls")
            for u in uses:
                if u["name"] == "Read":
                    read_ids[u["id"]] = u["input"]["file_path"]
                if u["name"] == "Edit":
                    found.add("edit")
            for x in c:
                if isinstance(x, dict) and x.get("type") == "tool_result" and x.get("is_error") is True:
                    found.add("failure")
    for path in read_ids.values():
        reads[path] = reads.get(path, 0) + 1
    if reads:
        found.add("read")
    if any(n >= 2 for n in reads.values()):
        found.add("re-read")
    ttl = TTL_S[session.ttl]
    ends: dict[str, float] = {}
    for r in session.requests:
        k = r.agent + "|" + r.model
        if k in ends:
            gap = r.at - ends[k]
            found.add("long gap" if gap > ttl + 30 else "short gap")
        ends[k] = r.end
    for a, b in zip(main, main[1:]):
        if len(b.body["messages"]) < len(a.body["messages"]) - 2:
            found.add("compaction")
    return found


ALL_FEATURES = {"40+ turns", "subagent", "side request", "model switch", "parallel calls", "edit", "failure",
                "read", "re-read", "long gap", "short gap", "compaction"}
