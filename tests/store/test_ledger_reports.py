"""The ledger reader's report and decisions-log queries, on a ledger written by the real writer."""

from __future__ import annotations

from scalpel_desktop.store import ledger_queries as q
from scalpel_desktop.store import ledger_reports as r
from tests.store.test_ledger_queries import req, write  # (a ledger the real writer wrote)


def test_report_rows_and_decisions():
    write([req(100.0, decision="unchanged", model="m1"), req(200.0, decision="cut", model="m2"),
           req(300.0, decision=None, model="m1")])
    conn = q.open_readonly()
    rows = list(r.report_rows(conn, since=100.0, until=300.0, group="model"))
    assert [row[0] for row in rows] == ["m1", "m2"] and len(rows[0]) == 1 + len(r.REPORT_COLUMNS)
    assert [row[5] for row in r.decision_rows(conn, 1000.0)] == ["cut"]  # unchanged (and unknown) left out
    assert len(r.decision_rows(conn, 1000.0, include_unchanged=True)) == 3
    assert r.decision_counts(conn, 1000.0) == {"unchanged": 1, "cut": 1, "unknown": 1}
    assert q.ledger_version(conn)[0] == 3
    conn.close()


def test_count_tokens_calls_are_marked_and_left_out_of_the_decisions_log():
    n, m = 4, 3
    write([req(100.0 + i, decision="unchanged") for i in range(n)]
          + [req(200.0 + i, endpoint="count_tokens", decision="unchanged") for i in range(m)]
          + [{"ts": 300.0, "session": "s1", "decision": "cut"}])  # no endpoint (hand-made): a request
    conn = q.open_readonly()
    side = [row[-1] for row in r.report_rows(conn)]
    assert side.count("count_tokens") == m and side.count(None) == n + 1
    assert r.REPORT_COLUMNS[-1] == "side_call"
    assert len(r.decision_rows(conn, 1000.0, include_unchanged=True)) == n + 1
    assert r.decision_counts(conn, 1000.0) == {"unchanged": n, "cut": 1}
    assert r.side_call_counts(conn, 1000.0) == {"count_tokens": m}
    assert r.side_call_counts(conn, 1000.0, since=201.5) == {"count_tokens": 1}
    assert r.side_call_counts(conn, 150.0) == {}
    conn.close()
