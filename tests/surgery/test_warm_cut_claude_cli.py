"""Issue 23, live: a warm cut at death, funded by the user's own savings, through a real Claude Code 2.1.332.

The user's ledger holds one saving and three earlier long sessions (all through
the proxy); a fourth long session with no idle gap (its large read dies at the
second request) then costs less through the proxy than directly, by Claude
Code's own ``total_cost_usd``, at lookback 20, and no more at 12 or 28 (the
pin makes the cut's read boundary the same under every reading). A shorter
session than the benchmark's (``benchmarks/warm_cut_live.py``: 55 turns, 35%).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from scalpel_desktop import clock
from scalpel_desktop.accounting.prices import PriceTable
from scalpel_desktop.bench.replay import replay_corpus
from tests.support import claude_bin
from tests.support.warm_live import build_ledger, long_run, snapshot_budget, snapshot_rows

TURNS = 20


@pytest.mark.claude_cli
def test_a_long_session_costs_less_through_the_proxy_under_every_reading(tmp_path, monkeypatch):
    claude_bin()
    clock_file = tmp_path / "clock"
    clock.set_offset(clock_file, 0)
    monkeypatch.setenv("SCALPEL_TEST_CLOCK_FILE", str(clock_file))
    prices = PriceTable.load()
    snapshot = build_ledger(tmp_path, TURNS)
    saved, staked = snapshot_budget(snapshot)
    if saved - staked <= 0:  # the resume's cold-break cut banked nothing for the bet to be paid from
        pytest.fail(f"no saving banked ({saved}, {staked}):\n" + "\n".join(map(str, snapshot_rows(snapshot))))
    by_lookback = {}
    for lookback in (12, 20, 28):
        direct = long_run(tmp_path, lookback, False, snapshot, prices, TURNS)
        proxied = long_run(tmp_path, lookback, True, snapshot, prices, TURNS)
        assert direct.cost_usd == pytest.approx(direct.bill_usd, rel=1e-6)  # Claude Code's figure is the bill
        assert proxied.cost_usd == pytest.approx(proxied.bill_usd, rel=1e-6)
        assert proxied.requests == direct.requests
        by_lookback[lookback] = (direct.cost_usd, proxied.cost_usd, proxied.decisions)
        if not proxied.decisions.get("cut", 0):
            pytest.fail(f"no cut at lookback {lookback}, budget ({saved}, {staked}):\n"
                        + "\n".join(str(r[:4]) + " " + str(r[4])[:400] for r in proxied.rows))
    d20, p20, decisions = by_lookback[20]
    assert decisions.get("cut", 0) >= 1, (decisions, by_lookback)  # the warm cut was made
    assert p20 <= 0.95 * d20, by_lookback
    assert all(p <= d for d, p, _ in by_lookback.values()), by_lookback

    # Issue 23 step 1: the bench, replaying the transcript Claude Code wrote of the DIRECT run at
    # lookback 20 (the emulator's default, as the bench's cache model), bills its default policy as
    # the emulator billed the proxied run of the same session: it makes the same warm cut, pinned.
    projects = Path(os.environ["CLAUDE_CONFIG_DIR"]) / "projects"
    # The bench starts from what the proxied runs' ledger held (the snapshot's budget): the resume's
    # cold-break saving is not in the transcripts' timestamps (the test clock moved only the proxy's).
    result = replay_corpus(projects, policies=["death"], prices=prices, hinted=False, budget_usd=saved - staked)
    direct20 = [x for x in result.sessions if "-L20d" in x.path and "subagents" not in x.path]
    assert len(direct20) == 1, [x.path for x in result.sessions]
    bench = direct20[0]
    assert bench.real_cost == pytest.approx(d20, rel=1e-3)  # the transcript's usage is the direct bill
    assert bench.cuts["death"] >= 1
    assert bench.costs["death"] == pytest.approx(p20, rel=0.01), (bench.costs, p20)
