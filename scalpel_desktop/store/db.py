"""The SQLite database: WAL mode, named ordered migrations recorded in it.

Migrations are modules in ``store/migrations`` named ``mNNN_<name>.py``, each
with a ``SQL`` string (or an ``apply(conn)`` function). They run in order of
their number, once each; the table ``_migrations`` records which ran (as llm
and sqlite-utils do). Every feature adds its own module; none edits another's.
"""

from __future__ import annotations

import importlib
import pkgutil
import sqlite3
import threading
import time
from pathlib import Path

from scalpel_desktop.paths import dirs
from scalpel_desktop.private_files import prepare_sqlite_file
from scalpel_desktop.store import migrations as _migrations_pkg


def migration_modules() -> list[tuple[str, object]]:
    names = sorted(
        m.name for m in pkgutil.iter_modules(_migrations_pkg.__path__) if m.name.startswith("m") and m.name[1:4].isdigit()
    )
    return [(n, importlib.import_module(f"{_migrations_pkg.__name__}.{n}")) for n in names]


def migrate(conn: sqlite3.Connection) -> list[str]:
    """Apply every migration not yet recorded; return the names applied.

    The whole check-and-apply runs in one ``BEGIN IMMEDIATE`` transaction, so two
    processes opening a new database at once serialize instead of racing (the
    second sees the first one's migrations recorded and applies nothing).
    """
    previous = conn.isolation_level
    conn.isolation_level = None  # we manage the transaction ourselves
    try:
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute("CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied_at REAL NOT NULL)")
            done = {r[0] for r in conn.execute("SELECT name FROM _migrations")}
            applied = []
            for name, mod in migration_modules():
                if name in done:
                    continue
                if hasattr(mod, "apply"):
                    mod.apply(conn)
                else:
                    for statement in split_sql(mod.SQL):
                        conn.execute(statement)
                conn.execute("INSERT INTO _migrations (name, applied_at) VALUES (?, ?)", (name, time.time()))
                applied.append(name)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    finally:
        conn.isolation_level = previous
    return applied


def split_sql(script: str) -> list[str]:
    """Split a migration script into complete statements (``executescript`` would
    commit the surrounding transaction)."""
    statements, current = [], ""
    for line in script.splitlines(keepends=True):
        current += line
        if sqlite3.complete_statement(current):
            if current.strip():
                statements.append(current.strip())
            current = ""
    if current.strip():
        statements.append(current.strip())
    return statements


def connect(path: Path | None = None) -> sqlite3.Connection:
    """Open (creating and migrating it when needed) the ledger database for writing.
    Readers use ``ledger_queries.open_readonly``."""
    path = Path(path or dirs().database)
    prepare_sqlite_file(path)  # 0600 before SQLite creates it (and its -wal/-shm) with the umask's mode
    conn = sqlite3.connect(path, timeout=5, check_same_thread=False)
    conn.row_factory = sqlite3.Row
    prepare(conn)
    return conn


_PREPARE_LOCK = threading.Lock()


def prepare(conn: sqlite3.Connection) -> list[str]:
    """WAL mode and migrations for a fresh connection. The runtime opens the same
    new file from several threads at once (ledger writer, tool store, surgery
    log); switching a new database to WAL while another connection migrates it
    can fail with "database is locked" at once, so within a process they take
    turns (across processes ``migrate``'s BEGIN IMMEDIATE does)."""
    with _PREPARE_LOCK:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        return migrate(conn)
