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
    second sees the first one's migrations recorded and applies nothing). A database
    with every migration recorded is only read: opening it never waits for another
    program that holds its write lock (a sqlite3 shell, a backup tool).
    """
    if _up_to_date(conn):
        return []  # nothing to apply: no write lock asked for (a read goes on while another program writes)
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


def _up_to_date(conn: sqlite3.Connection) -> bool:
    """Every migration already recorded? (A read, outside any transaction; False when unsure.)"""
    try:
        done = {r[0] for r in conn.execute("SELECT name FROM _migrations")}
    except sqlite3.Error:
        return False  # no table yet (a new file), or unreadable: the write path says why
    return all(name in done for name, _ in migration_modules())


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


def connect(path: Path | None = None, timeout: float = 5.0) -> sqlite3.Connection:
    """Open (creating and migrating it when needed) the ledger database for writing.
    Readers use ``ledger_queries.open_readonly``. ``timeout``: SQLite's busy timeout."""
    path = Path(path or dirs().database)
    prepare_sqlite_file(path)  # 0600 before SQLite creates it (and its -wal/-shm) with the umask's mode
    conn = sqlite3.connect(path, timeout=timeout, check_same_thread=False)
    conn.row_factory = sqlite3.Row
    try:
        prepare(conn)
    except BaseException:
        conn.close()
        raise
    return conn


_PREPARE_LOCK = threading.Lock()


def prepare(conn: sqlite3.Connection, lock_timeout: float = -1) -> list[str]:
    """WAL mode and migrations for a fresh connection. The runtime opens the same
    new file from several threads at once (ledger writer, tool store, surgery
    log); switching a new database to WAL while another connection migrates it
    can fail with "database is locked" at once, so within a process they take
    turns (across processes ``migrate``'s BEGIN IMMEDIATE does). ``lock_timeout``
    bounds the wait for that turn (-1: none); past it the caller gets the same
    "database is locked" as from SQLite (the ledger writer retries it)."""
    if not _PREPARE_LOCK.acquire(timeout=lock_timeout):
        raise sqlite3.OperationalError("database is locked (another thread of this process is migrating it)")
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        return migrate(conn)
    finally:
        _PREPARE_LOCK.release()
