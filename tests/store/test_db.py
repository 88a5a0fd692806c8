"""store/db.py: WAL, ordered migrations recorded once, statement splitting."""

from __future__ import annotations

import sqlite3
import types

import pytest

from scalpel_desktop.paths import dirs
from scalpel_desktop.store import db


def test_split_sql_keeps_statements_whole_including_triggers():
    script = """
CREATE TABLE a (x TEXT DEFAULT ';');
CREATE TRIGGER t AFTER INSERT ON a BEGIN
    UPDATE a SET x = 'y;z';
END;
-- trailing comment without a statement
"""
    parts = db.split_sql(script)
    assert len(parts) == 3
    assert parts[0] == "CREATE TABLE a (x TEXT DEFAULT ';');"
    assert parts[1].startswith("CREATE TRIGGER") and parts[1].endswith("END;")
    assert parts[2] == "-- trailing comment without a statement"
    assert db.split_sql("") == []


def test_connect_defaults_to_the_ledger_path_under_scalpel_home():
    conn = db.connect()
    assert dirs().database.exists()
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("SELECT COUNT(*) FROM _migrations").fetchone()[0] == len(db.migration_modules())
    conn.close()


def test_a_failing_migration_rolls_back_everything_it_did(tmp_path, monkeypatch):
    good = types.SimpleNamespace(SQL="CREATE TABLE good (x);")
    bad = types.SimpleNamespace(SQL="CREATE TABLE half (x);\nTHIS IS NOT SQL;")
    monkeypatch.setattr(db, "migration_modules", lambda: [("m001_good", good), ("m002_bad", bad)])
    conn = sqlite3.connect(tmp_path / "x.sqlite3")
    with pytest.raises(sqlite3.OperationalError):
        db.migrate(conn)
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert "good" not in tables and "half" not in tables


def test_apply_functions_run_and_later_migrations_apply_once(tmp_path, monkeypatch):
    calls = []
    first = types.SimpleNamespace(SQL="CREATE TABLE one (x);")
    second = types.SimpleNamespace(apply=lambda conn: (calls.append(1), conn.execute("CREATE TABLE two (x)")))
    conn = sqlite3.connect(tmp_path / "x.sqlite3")
    monkeypatch.setattr(db, "migration_modules", lambda: [("m001_one", first)])
    assert db.migrate(conn) == ["m001_one"]
    monkeypatch.setattr(db, "migration_modules", lambda: [("m001_one", first), ("m002_two", second)])
    assert db.migrate(conn) == ["m002_two"]
    assert db.migrate(conn) == [] and calls == [1]
