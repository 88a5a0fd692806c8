"""The ledger reader: every named query on a ledger written by the real writers."""

from __future__ import annotations

import json
import re
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from scalpel_desktop import clock
from scalpel_desktop.paths import dirs
from scalpel_desktop.store import ledger_queries as q
from scalpel_desktop.store.cutlog import CutLog, CutRecord
from scalpel_desktop.store.db import connect
from scalpel_desktop.store.ledger import LedgerWriter


@pytest.fixture(autouse=True)
def utc(monkeypatch):
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def write(rows: list[dict]) -> None:
    w = LedgerWriter(dirs().database)
    for r in rows:
        assert w.submit(r)
    assert w.flush(30)
    w.close()


def req(ts: float, **kw) -> dict:
    return {"ts": ts, "session": "s1", "endpoint": "messages", "status": 200, **kw}


def test_no_ledger_yet():
    assert q.open_readonly() is None
    assert q.today_savings_or_zero() == q.Savings()
    assert q.with_ledger("default", q.cut_exists, "toolu_1") == "default"


def test_a_ledger_without_tables_answers_the_default(tmp_path):
    path = tmp_path / "empty.sqlite3"
    sqlite3.connect(path).close()
    assert q.with_ledger("default", q.today_savings, db=path) == "default"
    conn = q.open_readonly(path)
    assert not q.has_requests(conn) and q.ledger_version(conn) == (0, ())
    conn.close()


def test_the_reader_never_writes():
    write([req(time.time())])
    conn = q.open_readonly()
    with pytest.raises(sqlite3.OperationalError):
        conn.execute("DELETE FROM requests")
    conn.close()


def test_today_is_since_local_midnight_and_honours_the_test_clock(tmp_path, monkeypatch):
    now = time.time()
    midnight = clock.start_of_today(now)
    rows = [req(midnight - 1, realized_tokens=50_000, realized_usd=1.0),  # yesterday, 23:59:59
            req(midnight, realized_tokens=1200, realized_usd=0.01),
            req(midnight + 1, realized_tokens=None, realized_usd=None),  # unchanged: counted, saves nothing
            req(now - 1, realized_tokens=34, realized_usd=0.0025, session="s2")]
    write(rows)
    today = q.with_ledger(None, q.today_savings, now)
    assert (today.tokens, today.usd, today.requests, today.since) == (1234, pytest.approx(0.0125), 3, midnight)
    assert q.today_savings_or_zero(now=now) == today
    # With no ``now``, "today" moves with the test clock: a day later, none of these rows is today's.
    clock_file = tmp_path / "clock"
    monkeypatch.setenv("SCALPEL_TEST_CLOCK_FILE", str(clock_file))
    clock.set_offset(clock_file, 86400)
    assert q.today_savings_or_zero().requests == 0
    clock.set_offset(clock_file, 0)
    assert q.today_savings_or_zero().requests == 3


def test_count_tokens_calls_are_side_calls_not_requests():
    """A ledger with N conversation requests and M count_tokens calls: N requests, M apart, and the
    side calls' columns in no saving (a row without an endpoint, hand-made, is a request)."""
    n, m = 5, 3
    write([req(1000.0 + i, realized_tokens=10, realized_usd=0.5) for i in range(n)]
          + [req(1100.0 + i, endpoint="count_tokens", realized_tokens=7_777, realized_usd=9.0) for i in range(m)]
          + [{"ts": 1200.0, "session": "s1", "status": 200}])
    got = q.with_ledger(None, q.savings_since, 0.0)
    assert (got.requests, got.side_calls, got.tokens, got.usd) == (n + 1, m, 10 * n, pytest.approx(0.5 * n))
    assert q.with_ledger(None, q.savings_since, 1100.0, 1200.0).side_calls == m


def test_savings_since_bounds():
    write([req(1000.0, realized_tokens=1, realized_usd=0.1), req(2000.0, realized_tokens=2, realized_usd=0.2),
           req(3000.0, realized_tokens=4, realized_usd=0.4)])
    conn = q.open_readonly()
    assert q.savings_since(conn, 2000.0).tokens == 6
    assert q.savings_since(conn, 1000.0, 2000.0).tokens == 3  # ``until`` is inclusive
    conn.close()


def test_session_figures():
    write([
        req(100.0, model="claude-sonnet-4-5", input_tokens=10, cache_write_5m=1000, cache_read=0,
            realized_tokens=None, decision="unchanged", reason="nothing dead"),
        req(101.0, agent="agent-1", input_tokens=5, cache_read=900, cache_write_5m=100),  # a sub-agent
        req(102.0, endpoint="count_tokens", realized_tokens=99_999),  # not a conversation request
        req(103.0, model="claude-sonnet-4-5", input_tokens=20, cache_write_5m=300, cache_read=1000,
            realized_tokens=700, realized_usd=0.002, decision="cut", reason="free"),
        req(104.0, session="other", input_tokens=1, realized_tokens=5),
    ])
    conn = q.open_readonly()
    f = q.session_figures(conn, "s1")
    assert (f.turns, f.subagent_requests, f.requests, f.last_ts) == (2, 1, 3, 103.0)
    assert (f.realized_tokens, f.realized_usd) == (700, pytest.approx(0.002))
    assert (f.model, f.context_tokens, f.context_source, f.context_cache_read) == ("claude-sonnet-4-5", 1320,
                                                                                   "usage", 1000)
    assert f.cache_share == pytest.approx((0 + 900 + 1000) / (1010 + 1005 + 1320)) and f.cache_requests == 3
    assert (f.last_decision, f.last_reason) == ("cut", "free")
    earlier = q.session_figures(conn, "s1", until=100.5)
    assert earlier.turns == 1 and earlier.context_tokens == 1010 and earlier.realized_tokens == 0
    assert q.session_figures(conn, "nobody") is None and q.session_figures(conn, "") is None
    assert q.recent_sessions(conn, 0.0, 200.0, 10) == ["other", "s1"]
    conn.close()


def test_session_figures_fall_back_to_the_estimate():
    write([req(100.0, est_tokens_before=5000, est_tokens_after=4200, status=529, error="HTTP 529")])
    f = q.with_ledger(None, q.session_figures, "s1")
    assert (f.context_tokens, f.context_source, f.context_cache_read, f.cache_share) == (4200, "estimate", None, None)


def test_the_surgery_log_queries():
    conn = connect()
    CutLog(conn).record([CutRecord(f"toolu_{i}", s, "", 1000.0 + i, "duplicate", 10 * i, f"{i:064x}", 1, "e" * 64)
                         for i, s in ((1, "abc_1"), (2, "abc_1"), (3, "abcd"), (4, "zzz"))])
    conn.execute("INSERT INTO tool_calls (session, tool_use_id, name, ts) VALUES ('abc_1', 'toolu_2', 'Read', 1)")
    conn.commit()
    conn.close()
    ro = q.open_readonly()
    assert q.cut_exists(ro, "toolu_3") and not q.cut_exists(ro, "toolu_9")
    assert [(c.tool_use_id, c.tool) for c in q.cut_entries(ro, session="abc_1")] == [("toolu_2", "Read"),
                                                                                       ("toolu_1", "")]
    assert [c.tool_use_id for c in q.cut_entries(ro, limit=2)] == ["toolu_4", "toolu_3"]
    assert [c.tool_use_id for c in q.cut_entries(ro, until=1002.0, limit=None)] == ["toolu_2", "toolu_1"]
    assert sorted(q.cut_sessions(ro, "abc")) == ["abc_1", "abcd"]
    assert q.cut_sessions(ro, "abc_") == ["abc_1"]  # "_" is a literal, not LIKE's wildcard
    assert q.ledger_version(ro)[1] == (4, 1004.0)
    ro.close()


def test_the_hooks_and_statusline_import_nothing_heavy():
    """They run as fresh processes on every tool call (benchmarks/hooks_latency.py)."""
    write([req(time.time(), realized_tokens=10)])
    code = ("import sys, json; from scalpel_desktop.service.statusline import render; "
            "from scalpel_desktop.service import hook_logic; "
            "render({'session_id': 's1'}); hook_logic._maybe_cut('toolu_1'); "
            "print(json.dumps(sorted(sys.modules)))")
    out = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True, timeout=60,
                         env=dict(os.environ), check=True).stdout
    loaded = set(json.loads(out))
    assert "scalpel_desktop.store.ledger_queries" in loaded and "sqlite3" in loaded
    heavy = {"dataclasses", "inspect", "logging", "asyncio", "aiohttp", "textual", "threading",
             "scalpel_desktop.store.ledger", "scalpel_desktop.store.db", "scalpel_desktop.accounting.report"}
    assert not heavy & loaded, heavy & loaded


_LEDGER_SQL = re.compile(r"\b(?:FROM|INTO|UPDATE|JOIN|TABLE)\s+(?:requests|cuts)\b")


def ledger_sql_outside_store(root: Path) -> list[str]:
    """Files under ``root`` (a package tree) that write SQL on the ledger's tables outside store/."""
    return sorted(str(p.relative_to(root)) for p in root.rglob("*.py")
                  if p.relative_to(root).parts[0] != "store" and _LEDGER_SQL.search(p.read_text(encoding="utf-8")))


def test_only_the_store_touches_the_ledgers_tables(tmp_path):
    import scalpel_desktop

    assert ledger_sql_outside_store(Path(scalpel_desktop.__file__).parent) == []
    # ... and the check sees a planted violation (and leaves store/ alone).
    (tmp_path / "store").mkdir()
    (tmp_path / "store" / "ok.py").write_text('SQL = "SELECT 1 FROM requests"\n')
    (tmp_path / "tray").mkdir()
    (tmp_path / "tray" / "bad.py").write_text('conn.execute("SELECT COUNT(*) FROM cuts WHERE x = ?")\n')
    assert ledger_sql_outside_store(tmp_path) == ["tray/bad.py"]


def test_today_is_unknown_not_zero_when_the_ledger_is_there_and_cannot_be_read(tmp_path):
    assert q.today_savings_or_unknown(tmp_path / "none.sqlite3") == (q.Savings(), "")  # no ledger: a true 0
    empty = tmp_path / "empty.sqlite3"
    sqlite3.connect(empty).close()
    assert q.today_savings_or_unknown(empty) == (q.Savings(), "")  # a new file, tables not made yet
    garbage = tmp_path / "garbage.sqlite3"
    garbage.write_bytes(b"not a database, " * 512)
    folder = tmp_path / "folder.sqlite3"
    folder.mkdir()
    for broken in (garbage, folder):
        today, why = q.today_savings_or_unknown(broken)
        assert today is None and why, broken
    now = time.time()
    write([req(now - 1, realized_tokens=34, realized_usd=0.0025)])
    today, why = q.today_savings_or_unknown(now=now)
    assert (today.tokens, today.requests, why) == (34, 1, "")
