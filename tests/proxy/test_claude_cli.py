"""The real Claude Code CLI through the proxy: the session completes, and every request
reaches the emulator byte-identical to what Claude Code put on the wire (recorded by a
TCP relay between Claude Code and the proxy), including ``--resume``."""

from __future__ import annotations

import hashlib

import pytest

from scalpel_desktop.emulator.scripts import FINAL_TEXT, RESUME_TEXT, claude_code_session, prepare_workdir
from tests.proxy.wire_recorder import WireRecorder
from tests.support.claude_cli import run_claude

pytestmark = pytest.mark.claude_cli


def _key(method: str, target: str, body: bytes) -> tuple[str, str, str]:
    return method, target, hashlib.sha256(body).hexdigest()


def test_claude_code_session_and_resume_byte_identical(proxy, emu, tmp_path):
    workdir = prepare_workdir(tmp_path / "project")
    emu.set_script(claude_code_session(workdir))
    with WireRecorder(proxy.runtime.port) as wire:
        rc, result, out, err = run_claude(wire.url, workdir, "Work through the notes as scripted.", timeout=120)
        assert rc == 0, err[-2000:]
        assert result and not result.get("is_error"), out[-2000:]
        assert FINAL_TEXT in result["result"]
        assert "DONE: fixed the greeting" in (workdir / "notes.txt").read_text()
        session = result["session_id"]
        main_count = len(emu.received)

        rc, result, out, err = run_claude(wire.url, workdir, "Check the notes again.", resume=session, timeout=120)
        assert rc == 0, err[-2000:]
        assert RESUME_TEXT in result["result"]
        sent = wire.requests()

    got = emu.received
    print(f"{len(sent)} requests on the wire, {len(got)} at the upstream, {main_count} before --resume")
    assert len(sent) == len(got)
    assert len(got) > main_count >= 9  # the scripted turns, a subagent, side requests
    assert sorted(_key(r.method, r.target, r.body) for r in sent) == sorted(
        _key(r.method, r.path_qs, r.body) for r in got
    ), "every request must reach the upstream byte-identical to what Claude Code sent"
    assert any(r.headers.get("x-claude-code-agent-id") for r in got), "the subagent went through too"
    # the client's credentials arrived untouched
    assert {r.headers.get("x-api-key") for r in got if r.endpoint == "messages"} == {"sk-ant-api03-scalpel-test-dummy-key"}
    st = proxy.runtime.status()
    assert st["requests"] == len(got) and st["errors"] == 0
    assert st["tokens_in"] == sum(b.prompt_tokens for b in emu.bills)
