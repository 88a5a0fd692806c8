"""store/misses.py: the ledger's misses read through named queries; a ledger from before m008 has none."""

from __future__ import annotations

import json
import sqlite3

from scalpel_desktop.store import db
from scalpel_desktop.store.misses import miss_cost_by_session, miss_totals, misses_since, repeated_causes


def write(path, rows):
    conn = db.connect(path)
    for r in rows:
        conn.execute("INSERT INTO requests (ts, session, model, endpoint, cache_read, miss_cause, miss_tokens, "
                     "miss_usd, miss_detail) VALUES (?,?,?,?,?,?,?,?,?)", r)
    conn.commit()
    return conn


def test_misses_are_read_oldest_first_totalled_by_cause_and_by_session(tmp_path):
    conn = write(tmp_path / "l.sqlite3", [
        (100.0, "a", "m", "messages", 0, "ttl-expired", 1000, 0.01, json.dumps({"gap_s": 400})),
        (200.0, "a", "m", "messages", 10, None, None, None, None),
        (300.0, "b", "m", "messages", 5, "tools-changed", 500, 0.002, "not json"),
        (50.0, "b", "m", "messages", 5, "tools-changed", 500, 0.003, None),
    ])
    got = misses_since(conn, 60.0)
    assert [(x.session, x.cause, x.detail) for x in got] == [("a", "ttl-expired", {"gap_s": 400}),
                                                            ("b", "tools-changed", {})]
    assert [x.cause for x in misses_since(conn, 0.0, session="b")] == ["tools-changed", "tools-changed"]
    total = miss_totals(misses_since(conn))
    assert total["count"] == 3 and abs(total["cost_usd"] - 0.015) < 1e-9
    assert list(total["by_cause"]) == ["ttl-expired", "tools-changed"]  # the CAUSES order
    assert total["by_cause"]["tools-changed"] == {"count": 2, "cost_usd": 0.005}
    assert miss_cost_by_session(conn) == {"a": (1, 0.01), "b": (2, 0.005)}
    assert repeated_causes(conn, 0.0, ("tools-changed",), at_least=2) == [("b", "tools-changed", 2)]
    assert repeated_causes(conn, 0.0, ("tools-changed",), at_least=3) == []


def test_a_ledger_from_before_the_misses_answers_empty(tmp_path):
    conn = sqlite3.connect(tmp_path / "old.sqlite3")
    conn.execute("CREATE TABLE requests (id INTEGER PRIMARY KEY, ts REAL, session TEXT)")
    assert misses_since(conn) == [] and miss_cost_by_session(conn) == {}
    assert repeated_causes(conn, 0.0, ("tools-changed",)) == []
