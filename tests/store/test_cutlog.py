"""The surgery log survives restarts and answers per id, per session, most recent first."""

from __future__ import annotations

from scalpel_desktop.store import db
from scalpel_desktop.store.cutlog import CutLog, CutRecord
from scalpel_desktop.store.ledger_queries import cut_entries


def rec(i, session="s1", t=1000.0):
    return CutRecord(f"toolu_{i}", session, "", t + i, "duplicate", 100 * i, f"{i:064x}", 1, f"{i + 1:064x}")


def test_record_lookup_restart_sessions_recent():
    conn = db.connect()
    log = CutLog(conn)
    assert log.lookup(["toolu_1"]) == {}  # the id set is loaded before anything is recorded
    assert log.record([rec(i) for i in range(1, 4)] + [rec(9, "s2")]) == 4
    assert set(log.lookup([f"toolu_{i}" for i in range(0, 1200)])) == {"toolu_1", "toolu_2", "toolu_3", "toolu_9"}
    conn.close()
    again = CutLog(db.connect())
    assert again.lookup(["toolu_2"])["toolu_2"] == rec(2)
    assert [r.tool_use_id for r in cut_entries(again.conn, session="s1")] == ["toolu_3", "toolu_2", "toolu_1"]
    assert [r.tool_use_id for r in cut_entries(again.conn, limit=2)] == ["toolu_9", "toolu_3"]
    assert again.count() == 4
    newer = CutRecord("toolu_2", "s3", "a", 5000.0, "failed", 7, "f" * 64, 1, "e" * 64)
    again.record(newer)  # a re-cut id replaces its row
    assert again.lookup(["toolu_2"])["toolu_2"] == newer and again.count() == 4


def test_a_log_made_just_now_answers_without_a_query_and_learns_what_it_records(tmp_path):
    conn = db.connect(tmp_path / "dropped.db")
    log = CutLog(conn, empty=True)
    conn.execute("DROP TABLE cuts")  # any query would fail now: the answers come from memory
    assert not log.any_logged() and not log.any_known(["toolu_1"])
    conn.close()
    conn = db.connect(tmp_path / "fresh.db")
    log = CutLog(conn, empty=True)
    log.record([rec(1)])
    assert log.any_logged() and log.any_known(["toolu_1"]) and not log.any_known(["toolu_2"])


def test_rows_the_log_cannot_take_in_time_are_withdrawn_not_written_later(tmp_path):
    """Under another process's exclusive lock the write is not waited for: it is withdrawn
    (the caller does not send those cuts) and leaves no row once the lock is gone."""
    from scalpel_desktop.store.db import connect as connect_db
    from tests.support.db_lock import exclusive_lock

    path = tmp_path / "ledger.sqlite3"
    log = CutLog(connect_db(path))
    rec = CutRecord("toolu_locked", "s", "", 1.0, "superseded_read", 900, "a" * 64, 1, "b" * 64)
    with exclusive_lock(path):
        assert log.record_within([rec], 0.05) is False
        assert not log.any_known(["toolu_locked"])
    assert log.flush(10)
    assert log.count() == 0 and log.lookup(["toolu_locked"]) == {}
    assert log.record_within([rec], 5.0) is True  # the lock gone: logged, and known at once
    assert log.any_known(["toolu_locked"]) and log.lookup(["toolu_locked"])["toolu_locked"].tokens == 900
    assert log.flush(10) and CutLog(connect_db(path)).count() == 1
