"""`scalpel report`'s cost of a real Claude Code session equals Claude Code's own `total_cost_usd`.

Claude Code 2.1.332 prices every response itself, from the catalog baked into its binary; the
report prices the same responses from the ledger with the built-in price table. The session runs
through the real proxy to the emulator (which answers with the model the client asked for): once
with the model Claude Code picks by default with an API key, once with ``--model``.
"""

from __future__ import annotations

import contextlib
import io
import json

import pytest

from scalpel_desktop.cli import main
from scalpel_desktop.config import Config
from scalpel_desktop.emulator.scripts import (
    FINAL_TEXT,
    claude_code_session,
    prepare_workdir,
)
from scalpel_desktop.emulator.testing import running_emulator
from scalpel_desktop.runtime import Runtime
from tests.support.claude_cli import run_claude

pytestmark = pytest.mark.claude_cli

DEFAULT_MODEL = "claude-opus-5-5"  # what Claude Code 2.1.332 sends with an API key and no --model


def _report() -> dict:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["report", "--json", "--by", "model"]) == 0
    return json.loads(out.getvalue())


@pytest.mark.parametrize("model", [None, "claude-sonnet-5-5"])
def test_report_cost_equals_claude_codes_total_cost(model, tmp_path):
    workdir = prepare_workdir(tmp_path / "project")
    with running_emulator(claude_code_session(workdir)) as emu:
        rt = Runtime(Config.load(), {"anthropic_upstream": emu.url, "openai_upstream": emu.url}, port=0).start()
        try:
            rc, result, out, err = run_claude(f"http://127.0.0.1:{rt.port}", workdir, "Work through the notes as scripted.",
                                              extra_args=["--model", model] if model else [], timeout=180)
        finally:
            rt.stop()  # flushes the ledger
        sent = {r.json()["model"] for r in emu.api_requests}
    assert rc == 0, err[-2000:]
    assert result and not result.get("is_error") and FINAL_TEXT in result["result"], out[-2000:]
    assert sent == {model or DEFAULT_MODEL}
    report = _report()
    assert report["assumed_prices"] == {}  # every model Claude Code sent has its own row
    assert report["total"]["with_usage"] == len(emu.api_requests) >= 9
    ours, theirs = report["total"]["cost_usd"], result["total_cost_usd"]
    diff = (ours - theirs) / theirs
    print(f"model {model or DEFAULT_MODEL}: report ${ours:.6f}, Claude Code ${theirs:.6f}, {100 * diff:+.3f}%")
    assert theirs > 0 and abs(diff) <= 0.01
