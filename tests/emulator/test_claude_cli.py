"""The real Claude Code CLI runs the scripted session against the emulator directly."""

from __future__ import annotations

import pytest

from scalpel_desktop.emulator.scripts import FINAL_TEXT, RESUME_TEXT, SUBAGENT_TEXT, claude_code_session, prepare_workdir
from scalpel_desktop.emulator.testing import running_emulator
from scalpel_desktop.wire.jsoncodec import dumps
from tests.support.claude_cli import run_claude

pytestmark = pytest.mark.claude_cli


def tool_uses(body: dict) -> list[dict]:
    return [b for m in body["messages"] if m["role"] == "assistant" and isinstance(m["content"], list)
            for b in m["content"] if b.get("type") == "tool_use"]


def tool_results(body: dict) -> dict[str, dict]:
    return {b["tool_use_id"]: b for m in body["messages"] if m["role"] == "user" and isinstance(m["content"], list)
            for b in m["content"] if b.get("type") == "tool_result"}


def result_text(block: dict) -> str:
    c = block.get("content")
    if isinstance(c, list):
        return "\n".join(x.get("text", "") for x in c if isinstance(x, dict))
    return c or ""


def test_scripted_session_completes_and_resumes(tmp_path):
    wd = prepare_workdir(tmp_path / "proj")
    with running_emulator(claude_code_session(wd)) as emu:
        rc, res, out, err = run_claude(emu.url, wd, "Look at notes.txt and fix the TODO.")
        assert rc == 0, (out[-2000:], err[-2000:])
        assert res is not None and res["is_error"] is False and res["result"] == FINAL_TEXT
        assert "DONE: fixed the greeting" in (wd / "notes.txt").read_text()

        reqs = emu.api_requests
        assert reqs and all(r.status == 200 for r in reqs)
        assert all(r.path == "/v1/messages" for r in reqs)
        main = [r for r in reqs if r.track == "main"]
        sub = [r for r in reqs if r.track == "subagent"]
        assert sub and all(r.headers.get("x-claude-code-agent-id") for r in sub)
        assert not any(r.headers.get("x-claude-code-agent-id") for r in main)

        last = main[-1].json()
        uses = tool_uses(last)
        agent = next(t["name"] for t in last["tools"] if t["name"] in ("Agent", "Task"))
        assert [u["name"] for u in uses] == ["Read", "Bash", "Edit", "Bash", "Read", "Read", "Bash", agent]
        results = tool_results(last)
        assert set(results) == {u["id"] for u in uses}
        failing = results[uses[3]["id"]]
        assert failing.get("is_error") is True and "Exit code 1" in result_text(failing)
        assert "DONE: fixed the greeting" in result_text(results[uses[4]["id"]])
        assert SUBAGENT_TEXT in result_text(results[uses[7]["id"]])
        sub_last = sub[-1].json()
        (sub_read,) = tool_uses(sub_last)
        assert sub_read["name"] == "Read" and "DONE" in result_text(tool_results(sub_last)[sub_read["id"]])
        # Claude Code's own breakpoints: every later main turn reads the cache
        assert all(r.usage.cache_read > 0 for r in main[1:])

        before = len(emu.received)
        rc, res2, out, err = run_claude(emu.url, wd, "Check notes.txt again.", resume=res["session_id"])
        assert rc == 0, (out[-2000:], err[-2000:])
        assert res2["result"] == RESUME_TEXT
        resumed = [r for r in emu.received[before:] if r.endpoint == "messages" and r.track == "resume"]
        assert len(resumed) == 2
        old, new = last["messages"], resumed[0].json()["messages"]
        # everything before the old last message comes back byte for byte
        assert [dumps(m) for m in new[: len(old) - 1]] == [dumps(m) for m in old[:-1]]
        assert resumed[0].usage.cache_read > 0

        before = len(emu.received)
        rc, res3, out, err = run_claude(emu.url, wd, "Continue: check notes.txt once more.", continue_=True)
        assert rc == 0, (out[-2000:], err[-2000:])
        assert res3["result"] == RESUME_TEXT
        assert [r.track for r in emu.received[before:] if r.endpoint == "messages" and r.track != "side"] == \
            ["resume", "resume"]
