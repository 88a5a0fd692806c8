"""`scalpel report`'s cost of a real Claude Code session equals Claude Code's own `total_cost_usd`,
and its request count is the one Claude Code's `/cost` shows, its `count_tokens` calls apart.

Claude Code 2.1.332 prices every response itself, from the catalog baked into its binary; the
report prices the same responses from the ledger with the built-in price table. The session runs
through the real proxy to the emulator (which answers with the model the client asked for): once
with the model Claude Code picks by default with an API key, once with ``--model``. Then the interactive TUI (tmux): two turns and ``/context``, which sends a
burst of ``count_tokens`` calls; ``/cost`` counts the two requests only, and so must the report.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import time

import pytest

from scalpel_desktop.cli import main
from scalpel_desktop.config import Config
from scalpel_desktop.emulator.scripts import (
    FINAL_TEXT,
    claude_code_session,
    prepare_workdir,
    text_reply,
)
from scalpel_desktop.emulator.testing import running_emulator
from scalpel_desktop.runtime import Runtime
from tests.support.claude_cli import run_claude
from tests.support.claude_tui import ClaudeTui

pytestmark = pytest.mark.claude_cli

DEFAULT_MODEL = "claude-opus-5-5"  # what Claude Code 2.1.332 sends with an API key and no --model


def _report(*argv: str) -> dict:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["report", "--json", "--by", "model", *argv]) == 0
    return json.loads(out.getvalue())


def _table() -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["report"]) == 0
    return out.getvalue()


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


REPLY = "Hello from the scalpel emulator."
COST_REQUESTS = re.compile(r"Prompt cache \(main\):\s+(\d+) requests?")


def test_report_counts_the_requests_claude_codes_cost_counts(tmp_path):
    workdir = tmp_path / "project"
    workdir.mkdir()
    with running_emulator(text_reply(REPLY)) as emu:
        rt = Runtime(Config.load(), {"anthropic_upstream": emu.url, "openai_upstream": emu.url}, port=0).start()
        try:
            with ClaudeTui(f"http://127.0.0.1:{rt.port}", workdir) as tui:
                for text in ("first turn", "second turn"):
                    before = len(emu.api_requests)
                    tui.send(text)
                    tui.wait_for(lambda s, before=before, text=text: len(emu.api_requests) > before
                                 and all(r.status is not None for r in emu.received)
                                 and REPLY in s.rsplit(text, 1)[-1], timeout=90, what=f"the answer to {text!r}")
                tui.send("/context")
                tui.wait_for(lambda s: any(r.endpoint == "count_tokens" for r in emu.received)
                             and "/context all" in s, timeout=60, what="/context")
                settled = len(emu.received)
                time.sleep(1.0)  # /context's burst of count_tokens calls is over when none came for a second
                while len(emu.received) != settled:
                    settled = len(emu.received)
                    time.sleep(1.0)
                tui.keys("Escape")
                tui.send("/cost")
                screen = tui.wait_for(lambda s: COST_REQUESTS.search(s) is not None, timeout=30, what="/cost")
        finally:
            rt.stop()  # flushes the ledger
    theirs = int(COST_REQUESTS.search(screen).group(1))
    counted = sum(r.endpoint == "count_tokens" for r in emu.received)
    assert counted > 0  # /context asked: the case that mixed them in
    total = _report()["total"]
    print(f"/cost: {theirs} requests; report: {total['requests']} requests, side calls {total['side_calls']}")
    assert total["requests"] == theirs == len(emu.api_requests)
    assert total["side_calls"] == {"count_tokens": counted}
    table = _table()
    assert table.splitlines()[0] == f"scalpel report: {theirs} requests"
    assert f"{counted} count_tokens calls" in table
