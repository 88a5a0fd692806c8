from __future__ import annotations

import sqlite3

from scalpel_desktop.store import db
from scalpel_desktop.store.migrations import m001_requests

SCHEMA_COLUMNS = [
    "id", "ts", "session", "agent", "client", "api", "endpoint", "model", "status", "body_bytes", "sent_bytes",
    "est_tokens_before", "est_tokens_after", "input_tokens", "cache_write_5m", "cache_write_1h", "cache_read",
    "output_tokens", "decision", "reason", "tokens_removed", "figures", "realized_tokens", "realized_usd",
    "ttfb_ms", "total_ms", "error",
    # m004: how the realized figures were obtained
    "realized_tier", "realized_tokens_by", "realized_bytes", "tokens_per_byte", "ratio_pairs", "ratio_error_pct",
    # m005: what the dashboard names and splits
    "project", "regions",
    # m006: the user's risk budget
    "banked_usd", "staked_usd",
    # m007: what a first sighting after a restart needs (store/resume_points.py)
    "prefix_units", "prefix_digest", "ttl_s", "answered_at",
    # m008: a request's cache miss (pipeline/miss_watch.py, store/misses.py)
    "miss_cause", "miss_tokens", "miss_usd", "miss_detail",
    # m009: each row's own id, so that a journaled row is never written twice (store/row_journal.py)
    "uid",
    # m010: the provider's own cache diagnosis (proxy/diagnostics.py), beside the proxy's miss_cause
    "provider_miss_reason", "provider_missed_tokens",
]


def test_migrations_are_ordered_by_number():
    names = [n for n, _ in db.migration_modules()]
    assert names == sorted(names, key=lambda n: int(n[1:4]))
    assert names[0] == "m001_requests"
    assert len({n[1:4] for n in names}) == len(names), "two migrations share a number"


def test_requests_table_matches_the_agreed_schema(tmp_path):
    conn = db.connect(tmp_path / "l.sqlite3")
    info = list(conn.execute("PRAGMA table_info(requests)"))
    assert [r["name"] for r in info] == SCHEMA_COLUMNS
    types = {r["name"]: r["type"] for r in info}
    assert types["ts"] == "REAL" and types["figures"] == "TEXT" and types["realized_usd"] == "REAL"
    assert all(types[c] == "INTEGER" for c in ("input_tokens", "cache_write_5m", "cache_write_1h", "cache_read",
                                                 "output_tokens", "status", "body_bytes"))
    assert (types["provider_miss_reason"], types["provider_missed_tokens"]) == ("TEXT", "INTEGER")
    indexed = {r["name"]: [c["name"] for c in conn.execute(f"PRAGMA index_info({r['name']})")]
               for r in conn.execute("PRAGMA index_list(requests)")}
    assert ["ts"] in indexed.values() and ["session"] in indexed.values()
    unique = {r["name"] for r in conn.execute("PRAGMA index_list(requests)") if r["unique"]}
    assert [indexed[name] for name in unique] == [["uid"]]
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_migrations_are_recorded_and_idempotent(tmp_path):
    path = tmp_path / "l.sqlite3"
    conn = db.connect(path)
    recorded = [r["name"] for r in conn.execute("SELECT name FROM _migrations ORDER BY name")]
    assert "m001_requests" in recorded
    assert recorded == [n for n, _ in db.migration_modules()]
    conn.execute("INSERT INTO requests (ts, model) VALUES (1.0, 'x')")
    conn.commit()
    conn.close()
    conn2 = db.connect(path)  # a second open applies nothing and keeps the data
    assert db.migrate(conn2) == []
    assert conn2.execute("SELECT count(*) FROM requests").fetchone()[0] == 1
    assert conn2.execute("SELECT count(*) FROM _migrations WHERE name='m001_requests'").fetchone()[0] == 1


def test_m001_sql_runs_twice_without_error():
    conn = sqlite3.connect(":memory:")
    conn.executescript(m001_requests.SQL)
    conn.executescript(m001_requests.SQL)
    assert conn.execute("SELECT count(*) FROM requests").fetchone()[0] == 0


def test_two_processes_migrating_a_new_database_at_once_do_not_race(tmp_path):
    import subprocess
    import sys

    db = tmp_path / "race.sqlite3"
    code = (
        "import sys; from scalpel_desktop.store.db import connect; "
        f"c = connect({str(db)!r}); print(len(list(c.execute('select * from _migrations'))))"
    )
    procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for _ in range(4)]
    outs = [p.communicate(timeout=60) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1].decode()[-500:] for o in outs]
    counts = {int(o[0]) for o in outs}
    from scalpel_desktop.store.db import migration_modules
    assert counts == {len(migration_modules())}
