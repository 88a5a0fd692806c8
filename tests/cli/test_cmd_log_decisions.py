"""``scalpel log`` on cuts the real pipeline made: every cut, free or warm, with its decision.

A generated Claude Code session (``tests/invariants``) goes through the surgery stage
under the warm policies, on the ledger and spill dir ``scalpel log`` reads; each
request's ledger row is what the proxy's recorder builds (``pipeline/record.build_row``).
Every cut listed must name its reason, its boundary (free, pinned or worst case), where
the read surely stops, and for a warm cut its priced rewrite and expected payback.
"""

from __future__ import annotations

import json
import random
import sqlite3

import pytest

from scalpel_desktop import clock
from scalpel_desktop.paths import dirs
from scalpel_desktop.pipeline.record import build_row
from scalpel_desktop.store.ledger import LedgerWriter
from scalpel_desktop.store.spill import SpillStore

from tests.invariants.agent_sessions import generate
from tests.invariants.harness import Arm, Pipeline, PromptCache
from tests.support import run_cli


class _LedgeredPipeline(Pipeline):
    """The harness pipeline on the ledger and spill dir the CLI reads."""

    def __init__(self, config: dict):
        self.config = config
        self.db_path = dirs().database
        self.spill = SpillStore(dirs().spill)
        self.restart()


def _ledgered_session(policy: str, seed: int, monkeypatch) -> None:
    """Run one generated session through the pipeline, writing the ledger the CLI reads. The
    surgeon stamps each cut with the session's own clock, as the proxy's clock would."""
    now = [0.0]
    monkeypatch.setattr(clock, "now", lambda: now[0])
    dirs().data.mkdir(parents=True, exist_ok=True)
    pipe = _LedgeredPipeline({"policy": policy, "tier": 2})
    arm = Arm(PromptCache())
    writer = LedgerWriter(dirs().database)
    try:
        for req in generate(random.Random(seed)).requests:
            now[0] = req.at
            ex = pipe.process(req)
            body = json.loads(ex.body_to_send())
            pipe.complete(ex, req, arm.bill(req, body).usage)
            writer.submit(build_row(ex))
        assert writer.flush()
    finally:
        writer.close()
        pipe.conn.close()


@pytest.mark.parametrize("policy", ["death", "payback"])
def test_every_cut_in_the_log_has_its_reason_boundary_and_payback(policy, capsys, monkeypatch):
    _ledgered_session(policy, 2, monkeypatch)  # (a seed whose session makes free and warm cuts)
    code, out, _ = run_cli(capsys, "log", "--json", "--limit", "1000")
    assert code == 0
    rows = json.loads(out)
    assert rows, "the session made no cut"
    kinds = {r["boundary"] for r in rows}
    assert "free" in kinds and kinds & {"pinned", "worst-case"}, kinds  # both kinds are seen
    for r in rows:
        assert r["reason"] and r["boundary"] in ("free", "pinned", "worst-case"), r
        assert isinstance(r["read_stops_at"], int), r
        if r["boundary"] != "free":
            assert r["extra_usd"] is not None and r["payback_x"] is not None and r["turns_est"], r
            assert r["rewrite_tokens"] > 0 and r["reason"].startswith(("at death", "payback")), r
    code, out, _ = run_cli(capsys, "log", "--limit", "1000")
    assert code == 0
    assert "free boundary (read stops at message" in out
    assert "pinned boundary (read stops at message" in out and "repays" in out
    conn = sqlite3.connect(dirs().database)
    try:
        n = conn.execute("SELECT COUNT(*) FROM cuts").fetchone()[0]
    finally:
        conn.close()
    assert n == len(rows)  # every cut made is listed
