"""Through the real Claude Code CLI 2.1.332, the proxy and the emulated upstream.

With ReportFindings and Workflow removed (built-ins: --force) the scripted
multi-tool session (Read, Bash, Edit, a subagent, ...) still completes, the
upstream never sees the two declarations, and its bill shows the smaller prefix:
exactly the emulator's own token count of the two declarations less, on the
first request of the session.
"""

from __future__ import annotations

from scalpel_desktop.accounting.tokens import rule_tokens
from scalpel_desktop.cli import main as scalpel_main
from scalpel_desktop.config import Config
from scalpel_desktop.emulator.scripts import claude_code_session, prepare_workdir
from scalpel_desktop.emulator.testing import running_emulator
from scalpel_desktop.runtime import Runtime
from scalpel_desktop.wire.jsoncodec import dumps, loads
from tests.support import claude_bin
from tests.support.claude_cli import run_claude

REMOVED = ("ReportFindings", "Workflow")


def run_session(tmp_path, emu_url, name):
    work = prepare_workdir(tmp_path / "proj")  # the same path for both runs: identical prompts
    rt = Runtime(Config.load(), {"anthropic_upstream": emu_url}, port=0).start()
    try:
        code, result, out, err = run_claude(f"http://127.0.0.1:{rt.port}", work, "Look at notes.txt and fix the TODO.")
    finally:
        rt.stop()
    assert code == 0, f"{name}: claude exited {code}: {err[-2000:]}"
    assert result and not result.get("is_error"), f"{name}: {out[-2000:]}"
    return result


def first_main(emu):
    for r in emu.api_requests:
        body = r.json()
        if r.usage is not None and len(body.get("tools") or []) > 5 and "x-claude-code-agent-id" not in r.headers:
            return r, body
    raise AssertionError("no main-session request reached the emulator")


def test_session_completes_without_two_builtins_and_the_bill_shrinks(tmp_path, with_tool_stages, capsys):
    claude_bin()
    script = claude_code_session(tmp_path / "proj")

    # Baseline: the filter off.
    with running_emulator(script) as emu:
        run_session(tmp_path, emu.url, "baseline")
        base_req, base_body = first_main(emu)
        base_prompt = base_req.usage.prompt_tokens
        declared = {t["name"]: t for t in base_body["tools"]}
    assert set(REMOVED) <= set(declared)

    # Removing built-ins without --force is refused, and says what the model loses.
    assert scalpel_main(["tools", "remove", "Workflow"]) == 1
    assert "the model loses" in capsys.readouterr().err
    for n in REMOVED:
        assert scalpel_main(["tools", "remove", n, "--force"]) == 0
    assert scalpel_main(["tools", "on"]) == 0

    with running_emulator(script) as emu:
        result = run_session(tmp_path, emu.url, "filtered")
        assert "Done." in result.get("result", "")
        for r in emu.api_requests:
            names = {t.get("name") for t in (r.json().get("tools") or [])}
            assert not names & set(REMOVED), f"a removed declaration reached the upstream: {names & set(REMOVED)}"
            assert r.status == 200
        req, body = first_main(emu)
        saved = sum(rule_tokens(declared[n]) for n in REMOVED)
        assert req.usage.prompt_tokens == base_prompt - saved
        print(f"\nfirst request prompt: {base_prompt} tokens unfiltered, {req.usage.prompt_tokens} filtered "
              f"(-{saved}, the emulator's count of {', '.join(REMOVED)})")
        # every main-session request sent the same tools array, byte for byte (pinned for the session)
        main_tools = {dumps(loads(r.body)["tools"]) for r in emu.api_requests
                      if "x-claude-code-agent-id" not in r.headers and len(loads(r.body).get("tools") or []) > 5}
        assert len(main_tools) == 1
