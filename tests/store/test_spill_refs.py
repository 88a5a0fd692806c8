"""``store/spill_refs.py``: the spill files live conversations' stubs point at, from the surgery log and the requests."""

from __future__ import annotations

import sqlite3

from scalpel_desktop.paths import dirs
from scalpel_desktop.store.cutlog import CutLog, CutRecord
from scalpel_desktop.store.db import connect
from scalpel_desktop.store.ledger import LedgerWriter
from scalpel_desktop.store.ledger_queries import open_readonly
from scalpel_desktop.store.spill_refs import live_spills, live_window_s
from scalpel_desktop.wire.cache_rules import LONGEST_TTL_S

NOW = 1_900_000_000.0
HOURS = 24
WINDOW = LONGEST_TTL_S + HOURS * 3600


def cut(tid: str, session: str, created_at: float, sha: str, agent: str = "") -> CutRecord:
    return CutRecord(tid, session, agent, created_at, "duplicate", 500, sha, 1, "e" * 64)


def seed(cuts: list[CutRecord], requests: list[dict]) -> None:
    conn = connect()
    CutLog(conn).record(cuts)
    conn.close()
    w = LedgerWriter(dirs().database)
    for r in requests:
        assert w.submit(r)
    assert w.flush(30)
    w.close()


def test_the_window_is_the_longer_ttl_plus_the_setting():
    assert live_window_s(HOURS) == WINDOW and live_window_s(0) == LONGEST_TTL_S


def test_a_session_seen_within_the_window_keeps_every_file_its_cuts_name():
    a, b, c, d = ("a" * 64, "b" * 64, "c" * 64, "d" * 64)
    seed([cut("t1", "recent-cut", NOW - 180, a),  # a 3-minute-old cut
          cut("t2", "old-cut-new-request", NOW - 10 * 86400, b),  # cut long ago, but the session went on
          cut("t3", "gone", NOW - WINDOW - 60, c),  # last seen just past the window
          cut("t4", "gone-sub", NOW - 3 * 86400, d, agent="agent-1"),
          cut("t5", "recent-cut", NOW - 9 * 86400, d, agent="agent-2")],  # a sub-agent of a live session
         [{"ts": NOW - 2 * 3600, "session": "old-cut-new-request", "endpoint": "messages"},
          {"ts": NOW - WINDOW - 120, "session": "gone", "endpoint": "messages"}])
    conn = open_readonly()
    got = live_spills(conn, NOW, HOURS)
    assert got.hashes == {a, b, d} and got.sessions == 2
    assert (got.since, got.window_s) == (NOW - WINDOW, WINDOW)
    assert live_spills(conn, NOW + WINDOW, HOURS).hashes == frozenset()  # a day later, nothing is live
    assert live_spills(conn, NOW, 0).hashes == {a, d}  # the TTL alone: the 3-minute-old cut's session
    conn.close()


def test_a_ledger_without_a_surgery_log_has_nothing_live(tmp_path):
    path = tmp_path / "bare.sqlite3"
    sqlite3.connect(path).close()
    conn = open_readonly(path)
    assert live_spills(conn, NOW, HOURS).hashes == frozenset()
    conn.close()
