"""Claude-Code-shaped request bodies for tests and benchmarks (a fake, like mitmproxy's tflow).

``SessionBuilder`` appends turns the way Claude Code does: a user message,
the environment as a ``role: "system"`` message, assistant turns with a
thinking block (signature) and tool_use blocks, user turns with the results
(string content, ``is_error`` present or absent). ``body()`` renders the
request as Claude Code 2.1.x sends it: system blocks with two breakpoints,
the tools, and the moving cache marker on the last block of the last message.
"""

from __future__ import annotations

from typing import Any

from scalpel_desktop.wire.jsoncodec import dumps, loads

TOOL_NAMES = ("Read", "Bash", "Edit", "Write", "MultiEdit", "Grep", "Glob", "Agent", "AskUserQuestion", "ToolSearch")


class SessionBuilder:
    def __init__(self, cwd: str = "/home/user/proj", session_id: str = "00000000-0000-4000-8000-000000000001", ttl: str | None = None):
        self.cwd = cwd
        self.session_id = session_id
        self.ttl = ttl
        self.messages: list[dict] = []
        self._n = 0
        self.user("Please work on the project.")
        self.messages.append(
            {"role": "system", "content": f"# Environment\n - Primary working directory: {cwd}\n - Platform: linux\n"}
        )

    def _id(self) -> str:
        self._n += 1
        return f"toolu_test{self._n:06d}"

    def user(self, text: str) -> "SessionBuilder":
        self.messages.append({"role": "user", "content": [{"type": "text", "text": text}]})
        return self

    def text(self, text: str) -> "SessionBuilder":
        self.messages.append(
            {"role": "assistant", "content": [{"type": "thinking", "thinking": "", "signature": "c2ln"}, {"type": "text", "text": text}]}
        )
        return self

    def calls(self, calls: list[tuple[str, dict, Any, bool | None]]) -> list[str]:
        """One assistant turn with parallel tool calls, then one user turn with their results.

        Each call is (name, input, result content, is_error); ``is_error`` None
        leaves the key out. Returns the tool_use ids.
        """
        ids = [self._id() for _ in calls]
        blocks: list[dict] = [{"type": "thinking", "thinking": "", "signature": "c2ln"}]
        for tid, (name, inp, _, _) in zip(ids, calls):
            blocks.append({"type": "tool_use", "id": tid, "name": name, "input": inp})
        self.messages.append({"role": "assistant", "content": blocks})
        results = []
        for k, (tid, (_, _, content, err)) in enumerate(zip(ids, calls)):
            r: dict[str, Any] = (
                {"tool_use_id": tid, "type": "tool_result", "content": content}
                if k % 2 == 0
                else {"type": "tool_result", "tool_use_id": tid, "content": content}
            )
            if err is not None:
                r["is_error"] = err
            results.append(r)
        self.messages.append({"role": "user", "content": results})
        return ids

    def call(self, name: str, inp: dict, content: Any, is_error: bool | None = None) -> str:
        return self.calls([(name, inp, content, is_error)])[0]

    def body(self, model: str = "claude-opus-5-5") -> dict:
        msgs = loads(dumps(self.messages))  # a deep copy, fast
        marker: dict[str, Any] = {"type": "ephemeral"}
        if self.ttl:
            marker["ttl"] = self.ttl
        last = msgs[-1]
        if isinstance(last["content"], str):
            last["content"] = [{"type": "text", "text": last["content"]}]
        last["content"][-1]["cache_control"] = dict(marker)
        return {
            "model": model,
            "messages": msgs,
            "system": [
                {"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.332; cc_entrypoint=sdk-cli;"},
                {"type": "text", "text": "You are a Claude agent.", "cache_control": dict(marker)},
                {"type": "text", "text": "Use the tools well. " * 40, "cache_control": dict(marker)},
            ],
            "tools": [{"name": n, "description": f"The {n} tool.", "input_schema": {"type": "object"}} for n in TOOL_NAMES],
            "metadata": {"user_id": '{"device_id":"d","account_uuid":"","session_id":"%s"}' % self.session_id},
            "max_tokens": 32000,
            "thinking": {"type": "adaptive"},
            "stream": True,
        }


def file_text(path: str, lines: int, salt: str = "") -> str:
    """What Claude Code's Read returns: numbered lines."""
    return "".join(f"{i}\t{salt}line {i} of {path}: some code here = value_{i}\n" for i in range(1, lines + 1))


def reread_session(session_id: str, turns: int = 6) -> SessionBuilder:
    """``turns`` files each read, edited and read again: the first read of each is superseded."""
    s = SessionBuilder(session_id=session_id)
    for i in range(turns):
        path = f"/home/user/proj/f{i}.py"
        s.call("Read", {"file_path": path}, file_text(path, 150))
        s.call("Edit", {"file_path": path, "old_string": "a", "new_string": "b"}, "updated")
        s.call("Read", {"file_path": path}, file_text(path, 150, salt="after"))
    return s
