"""The bench on sessions the real Claude Code CLI recorded here, against the emulator.

A third corpus, independent of ../shared/corpus: the emulator bills every
request by its own cache rules (SPEC section 3) and counts tokens by its own
rule, and Claude Code writes that bill into its transcripts' usage. The
anchored simulator measures each sequence's tokens per byte from that usage
(about 0.25 here, where the shared corpus packs 0.15-0.5) and must reproduce
the bill within the same 2%, with nothing fitted on anything.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from scalpel_desktop.accounting.prices import PriceTable
from scalpel_desktop.bench.check import TARGET_PCT, check_report
from scalpel_desktop.bench.replay import replay_corpus
from scalpel_desktop.emulator.scripts import claude_code_session, prepare_workdir
from scalpel_desktop.emulator.testing import running_emulator
from tests.support.claude_cli import run_claude

pytestmark = pytest.mark.claude_cli


def test_the_check_holds_on_sessions_the_real_cli_recorded(tmp_path):
    wd = prepare_workdir(tmp_path / "proj")
    with running_emulator(claude_code_session(wd)) as emu:
        rc, res, out, err = run_claude(emu.url, wd, "Look at notes.txt and fix the TODO.")
        assert rc == 0, (out[-2000:], err[-2000:])
        rc, _, out, err = run_claude(emu.url, wd, "Check notes.txt again.", resume=res["session_id"])
        assert rc == 0, (out[-2000:], err[-2000:])
        rc, _, out, err = run_claude(emu.url, wd, "Continue: check notes.txt once more.", continue_=True)
        assert rc == 0, (out[-2000:], err[-2000:])
        billed = [r for r in emu.api_requests if r.usage is not None]
    projects = Path(os.environ["CLAUDE_CONFIG_DIR"]) / "projects"
    assert list(projects.rglob("*.jsonl"))
    result = replay_corpus(projects, policies=["off", "cold", "death", "payback"], prices=PriceTable.builtin())
    assert result.sessions and sum(s.requests for s in result.sessions) >= 8
    assert len(billed) >= sum(s.requests for s in result.sessions)
    check = check_report(result.sessions)
    assert check.real_cost > 0
    assert abs(check.error_pct) <= TARGET_PCT, check.as_dict()
    for s in result.sessions:  # the emulator counts ~4 bytes a token: each sequence measures that itself
        assert 0.15 < s.ratio.tokens_per_byte < 0.4, (s.name, s.ratio)
    # the default policy makes no session the real CLI recorded dearer (nor does any shipped one)
    from scalpel_desktop.config import KEYS

    for name in ("cold", KEYS["policy"].default, "payback"):
        t = result.policy(name)
        print(f"CLI sessions, {name}: saving {t.saving_pct:.2f}% of ${check.real_cost:.3f}, "
              f"{t.sessions_worse} dearer, {t.cuts} cuts")
        assert t.sessions_worse == 0, name
