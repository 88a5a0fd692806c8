"""surgery/ghost_turn.py: a dropped conversation recorded from its new messages records exactly what
its full analysis after the answer records, and leaves a ghost that vouches as that analysis's would."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from scalpel_desktop.accounting.prices import PriceTable
from scalpel_desktop.bench.stage_driver import SequenceBodies
from tests.surgery.economist_shapes import APPEND_ONLY
from scalpel_desktop.pipeline.calibrate import Calibrate
from scalpel_desktop.pipeline.chain import Chain
from scalpel_desktop.pipeline.identify import Identify
from scalpel_desktop.pipeline.parse_reuse import ParseReuse
from scalpel_desktop.pipeline.record import build_row
from scalpel_desktop.store.db import connect
from scalpel_desktop.surgery import ghost_turn
from scalpel_desktop.surgery.doom_watch import candidates
from scalpel_desktop.surgery.stage import build_surgery_stage
from scalpel_desktop.tools.inventory import calls_in
from scalpel_desktop.tools.inventory_stage import InventoryStage
from scalpel_desktop.tools.store import ToolStore
from scalpel_desktop.tools.writer import BackgroundWriter
from scalpel_desktop.wire.jsoncodec import loads
from tests.surgery.test_ghost import AGGRESSIVE, _send, _sequences

_GHOST_FIELDS = ("units", "head_len", "head_hash", "head_markers", "splices", "stubbed", "pins", "stubs",
                 "head_results", "project")


class _Inventory(InventoryStage):
    """The inventory stage with its job kept, not run: what it would record is compared."""

    def on_response(self, ex) -> None:
        ex.inventory_job, ex.inventory = ex.inventory, None


def _chain(tmp: Path, name: str, turns: bool, policy: str, extra: dict):
    # memo_mb 0: the memo keeps nothing, so both pipelines see every conversation dropped on every
    # request and take the same paths (parse-reuse keeps nothing either: the lane is open); only how
    # a request its ghost vouched for is recorded differs.
    stage = build_surgery_stage({"policy": policy, "tier": 2, "write_wait_ms": 5000, "memo_mb": 0, **extra},
                                connect(tmp / f"{name}.db"), tmp / "spill", PriceTable.builtin())
    stage.take_turns = turns
    inventory = _Inventory(ToolStore(connect(tmp / f"{name}-tools.db")), writer=BackgroundWriter())
    chain = Chain([ParseReuse(min_bytes=0, size=0), Identify(), Calibrate(), inventory, stage])
    chain.lane_min_bytes = 0
    return chain, stage


@pytest.mark.parametrize("policy,extra", [("death", {}), ("death", AGGRESSIVE), ("cold", dict(AGGRESSIVE, batch_min_tokens=0))])
def test_on_real_sessions_a_turn_records_what_the_full_analysis_records(tmp_path, caplog, policy, extra):
    taken = []
    take = ghost_turn.take_turn

    def counted(stage, ex, turn):
        taken.append(ex)
        return take(stage, ex, turn)

    ghost_turn.take_turn = counted
    try:
        with caplog.at_level(logging.WARNING, logger="scalpel"):
            compared = _compare(tmp_path, policy, extra)
    finally:
        ghost_turn.take_turn = take
    assert "failed" not in caplog.text and "now cuts" not in caplog.text
    turned = [ex for ex in taken if not ex.parsed]  # (a turn never parses the body in full)
    assert len(turned) == len(taken)
    # It means something: most requests were turns, some with earlier cuts re-applied, some with new
    # results watched (the ghost grown by a turn vouched for the next request).
    assert len(taken) >= compared["requests"] // 2, (len(taken), compared)
    assert compared["replayed"] >= 3 and compared["chained"] >= len(taken) // 2, compared


def _compare(tmp: Path, policy: str, extra: dict) -> dict:
    out = {"requests": 0, "replayed": 0, "chained": 0, "without": 0}
    for i, seq in enumerate(_sequences(5)):
        full, fstage = _chain(tmp, f"full{i}", False, policy, extra)
        turns, tstage = _chain(tmp, f"turns{i}", True, policy, extra)
        bodies = SequenceBodies(seq, {"tier": 2}, 2, markers=APPEND_ONLY)
        for k, req in enumerate(seq.requests):
            body, _ = bodies.doc(k)
            vouched = set(fstage.ghosts._items)  # conversations the full pipeline's ghosts may vouch for
            a = _send(full, body, req.ts, req.ts_done, req.usage)
            b = _send(turns, body, req.ts, req.ts_done, req.usage)
            where = (seq.name, k)
            assert a.body_to_send() == b.body_to_send(), where
            key = (a.key.session_id, a.key.agent_id)
            # A turn's ghost never vouches where the full analysis's would not; it may refuse where
            # that one vouches (its watch is the more cautious, or it could not advance: dropped),
            # and vouch where there is none (a full analysis that did not scan leaves no ghost).
            assert a.forwarded or not b.forwarded or key not in vouched, where
            out["without"] += a.forwarded and not b.forwarded
            ra, rb = build_row(a), build_row(b)
            assert ra == rb, (where, {f: (ra[f], rb[f]) for f in ra if ra[f] != rb[f]})
            assert (a.surgery.stubs if a.surgery else None) == (b.surgery.stubs if b.surgery else None), where
            assert _same_inventory(a, b), where
            ca, cb = fstage.economist.conversations.get(key), tstage.economist.conversations.get(key)
            assert (ca is None) == (cb is None), where
            if ca is not None:
                assert (ca.turns, ca.last_tokens, ca.entries, ca.dead_seen) == (cb.turns, cb.last_tokens, cb.entries, cb.dead_seen), where
                assert {m: [s.unit_hashes for s in v] for m, v in ca.models.items()} == \
                    {m: [s.unit_hashes for s in v] for m, v in cb.models.items()}, where
            ga, gb = fstage.ghosts.get(key), tstage.ghosts.get(key)
            if ga is not None and gb is not None:
                _same_ghost(ga, gb, where)
                out["chained"] += b.forwarded and not b.parsed
            # (a full analysis that did not scan for dead results leaves no ghost; a turn advances its
            # watch over the new results all the same)
            out["requests"] += 1
            out["replayed"] += bool(b.decision.figures.get("replayed")) and not b.parsed
    return out


def _same_inventory(a, b) -> bool:
    """The same record for the tool inventory: a full analysis's job lists every message, a turn's
    leaves the head out (None), and the recorder scans a conversation from its last message on
    (the head's end), so the calls it records from there must be the same."""
    ja, jb = getattr(a, "inventory_job", None), getattr(b, "inventory_job", None)
    if ja is None or jb is None:
        return ja is jb
    msgs_a, msgs_b = ja[2]["messages"], jb[2]["messages"]
    k = next((i for i, m in enumerate(msgs_b) if m is not None), len(msgs_b))
    return ja[0:2] == jb[0:2] and ja[3:] == jb[3:] and ja[2]["tools"] == jb[2]["tools"] \
        and len(msgs_a) == len(msgs_b) and msgs_a[k:] == msgs_b[k:] and calls_in(msgs_a, k) == calls_in(msgs_b, k)


def _rows(packed) -> set:
    return {tuple(map(repr, row)) for row in (loads(packed) if isinstance(packed, bytes) else packed)}


def _same_ghost(ga, gb, where) -> None:
    for f in _GHOST_FIELDS:
        assert getattr(ga, f) == getattr(gb, f), (where, f)
    assert tuple(ga.sent_hashes) == tuple(gb.sent_hashes), where
    assert list(ga.sizes) == list(gb.sizes), where
    wa, wb = ga.watch, gb.watch
    assert (wa.units, wa.results, wa.cd_seen) == (wb.units, wb.results, wb.cd_seen), where
    # What a new result may kill: at least what the full analysis's watch has (so a turn's ghost
    # never vouches where that one would not). It may have more: a read cut since the ghost it grew
    # from is a stub to the full scan, and the turn does not know which file it was (its death,
    # followed, is no candidate: ``candidates`` leaves out what was stubbed).
    assert _rows(wb.waiting) >= _rows(wa.waiting) and wb.snapshots >= wa.snapshots, where
    assert set(wb.content) >= set(wa.content) and wb.failed_due <= wa.failed_due, where
    # The candidates they give, now and as the conversation grows without new deaths: the same.
    for more_units in range(0, 12, 3):
        for more_results in range(0, 6, 2):
            units, results = wa.units + more_units, wa.results + more_results
            assert candidates(wa, units, results, ga.stubbed) == candidates(wb, units, results, gb.stubbed), where


def test_a_ghost_shares_the_economists_packed_hashes_rather_than_a_copy(tmp_path):
    """One blob of hashes per dropped conversation, not two (a turn's and its first ghost's)."""
    turns, stage = _chain(tmp_path, "shared", True, "death", {})
    seq = _sequences(1)[0]
    bodies = SequenceBodies(seq, {"tier": 2}, 2, markers=APPEND_ONLY)
    shared = 0
    for k, req in enumerate(seq.requests):
        body, _ = bodies.doc(k)
        ex = _send(turns, body, req.ts, req.ts_done, req.usage)
        key = (ex.key.session_id, ex.key.agent_id)
        g = stage.ghosts.get(key)
        if g is not None:
            assert g.sent_hashes is stage.economist.sent_hashes(key)
            shared += 1
    assert shared >= len(seq.requests) // 2
