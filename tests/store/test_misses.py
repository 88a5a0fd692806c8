"""store/misses.py: the ledger's misses read through named queries; a ledger from before m008 has none."""

from __future__ import annotations

import json
import sqlite3

from scalpel_desktop.store import db
from scalpel_desktop.store.misses import (
    by_cause, by_session, miss_cost_by_session, miss_totals, misses_since, repeated_causes,
)


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


# -- through the real writer and migrations: what the dashboard and the tray read ----------------

def written(path, rows):
    """``rows`` through the ledger's own writer (it runs the migrations, m008 and m010 among them)."""
    from scalpel_desktop.store.ledger import LedgerWriter

    w = LedgerWriter(path)
    for r in rows:
        assert w.submit(r)
    assert w.flush(30)
    w.close()
    return sqlite3.connect(path)


def miss(ts, session, cause, tokens, usd, provider=None, model="claude-sonnet-4-5-20250929"):
    return {"ts": ts, "session": session, "endpoint": "messages", "model": model, "status": 200,
            "input_tokens": 3, "cache_read": 1000, "cache_write_5m": tokens, "output_tokens": 50,
            "miss_cause": cause, "miss_tokens": tokens, "miss_usd": usd, "miss_detail": "{}",
            "provider_miss_reason": provider}


ROWS = [
    miss(1000.0, "s1", "ttl-expired", 20_000, 0.069, "previous_message_not_found"),
    miss(1100.0, "s1", "ttl-expired", 10_000, 0.0345),
    miss(1200.0, "s1", "tools-changed", 36_000, 0.1242, "tools_changed"),
    miss(1300.0, "s2", "unexplained", 5_000, 0.01725, "unavailable"),
    miss(1400.0, "s2", "a-cause-from-a-newer-proxy", 1_000, 0.00345),
    {"ts": 1500.0, "session": "s2", "endpoint": "messages", "status": 200, "cache_read": 9000},  # no miss
]


def test_by_cause_and_by_session_group_what_was_read(tmp_path):
    conn = written(tmp_path / "l.sqlite3", ROWS)
    rows = misses_since(conn)
    assert [r.provider_reason for r in rows] == ["previous_message_not_found", "", "tools_changed", "unavailable",
                                                 ""]
    assert rows[0].as_dict()["provider_reason"] == "previous_message_not_found"
    causes = by_cause(rows)
    seen = [r for r in ROWS if r.get("miss_cause")]
    # CAUSES order, and a cause this version does not know comes last instead of being lost
    assert [c.cause for c in causes] == ["ttl-expired", "tools-changed", "unexplained", "a-cause-from-a-newer-proxy"]
    for c in causes:
        mine = [r for r in seen if r["miss_cause"] == c.cause]
        assert (c.count, c.tokens_rewritten) == (len(mine), sum(r["miss_tokens"] for r in mine))
        assert abs(c.cost_usd - sum(r["miss_usd"] for r in mine)) < 1e-9
    assert sum(c.count for c in causes) == miss_totals(rows)["count"]
    sessions = by_session(rows)
    assert [s.session for s in sessions] == ["s1", "s2"]  # the costliest first
    s1 = sessions[0]
    assert s1.count == 3 and s1.tokens_rewritten == sum(r["miss_tokens"] for r in ROWS[:3])
    # ttl-expired happened twice but tools-changed cost more: the main cause is what cost most
    assert s1.main_cause == "tools-changed"
    assert s1.provider == (("previous_message_not_found", 1), ("tools_changed", 1))
    assert sessions[1].main_cause == "unexplained"


def test_main_cause_ties_go_to_the_more_frequent_then_the_first_cause():
    from scalpel_desktop.store.misses import CauseFigures, SessionMisses

    tie = SessionMisses("s", 3, 3, 0.3, (CauseFigures("ttl-expired", 1, 1, 0.15),
                                         CauseFigures("unexplained", 2, 2, 0.15)))
    assert tie.main_cause == "unexplained"
    even = SessionMisses("s", 2, 2, 0.2, (CauseFigures("ttl-expired", 1, 1, 0.1),
                                          CauseFigures("model-switch", 1, 1, 0.1)))
    assert even.main_cause == "ttl-expired" and SessionMisses("s", 0, 0, 0.0).main_cause == ""


def test_cost_by_session_of_some_sessions_up_to_a_time(tmp_path):
    conn = written(tmp_path / "l.sqlite3", ROWS)
    (n, usd), = miss_cost_by_session(conn, sessions=["s2"]).values()
    assert n == 2 and abs(usd - sum(r["miss_usd"] for r in ROWS[3:5])) < 1e-9
    got = miss_cost_by_session(conn, sessions=["s1", "s2"], until=1150.0)
    assert list(got) == ["s1"] and got["s1"][0] == 2
    assert abs(got["s1"][1] - sum(r["miss_usd"] for r in ROWS[:2])) < 1e-9
    assert miss_cost_by_session(conn, sessions=[]) == {}


def test_today_misses_from_local_midnight_zero_without_a_ledger_unknown_when_unreadable(tmp_path):
    from scalpel_desktop import clock
    from scalpel_desktop.store.misses import misses_between, today_misses_or_unknown

    now = clock.now()
    midnight = clock.start_of_today(now)
    path = tmp_path / "l.sqlite3"
    assert today_misses_or_unknown(path, now) == ((0, 0.0), "")  # no ledger yet: nothing happened today
    rows = [miss(now - 60, "a", "ttl-expired", 8000, 0.0276), miss(now - 30, "b", "model-switch", 4000, 0.0138),
            miss(midnight - 60, "a", "ttl-expired", 90_000, 0.3105)]  # yesterday: not today's
    written(path, rows).close()
    today = [r for r in rows if r["ts"] >= midnight]
    got, why = today_misses_or_unknown(path, now)
    assert why == "" and got[0] == len(today) and abs(got[1] - sum(r["miss_usd"] for r in today)) < 1e-9
    conn = sqlite3.connect(path)
    assert misses_between(conn, midnight - 3600, now)[0] == 3
    bad = tmp_path / "garbage.sqlite3"
    bad.write_bytes(b"this is not a database" * 100)
    got, why = today_misses_or_unknown(bad, now)
    assert got is None and "DatabaseError" in why
    old = tmp_path / "old.sqlite3"  # a ledger from before m008: no misses, not an error
    sqlite3.connect(old).execute("CREATE TABLE requests (id INTEGER PRIMARY KEY, ts REAL, session TEXT)")
    assert today_misses_or_unknown(old, now) == ((0, 0.0), "")
