from __future__ import annotations

import logging
import os
import shutil
import sqlite3
import subprocess
import threading
from contextlib import contextmanager

import pytest

from scalpel_desktop.paths import dirs
from scalpel_desktop.store import db
from scalpel_desktop.store.ledger import LedgerWriter
from tests.support.db_lock import exclusive_lock


def row(i: int = 0, **kw) -> dict:
    r = {"ts": 1000.0 + i, "session": f"s{i % 3}", "api": "anthropic", "endpoint": "messages",
         "model": "claude-sonnet-4-5", "status": 200, "body_bytes": 100 + i, "input_tokens": i}
    r.update(kw)
    return r


def count(path) -> int:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("SELECT count(*) FROM requests").fetchone()[0]
    finally:
        conn.close()


def wait_until(cond, timeout: float = 10.0) -> None:
    import time

    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def warnings_of(caplog) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "scalpel.ledger" and r.levelno == logging.WARNING]


def test_default_path_is_the_data_dir_database():
    w = LedgerWriter()
    try:
        w.submit(row())
        assert w.flush()
    finally:
        w.close()
    assert w.path == dirs().database and count(dirs().database) == 1
    assert (os.stat(w.path).st_mode & 0o777) == 0o600


def test_rows_are_written_on_the_writer_thread(tmp_path):
    inserting_threads: set[int] = set()

    def trace(conn):
        conn.set_trace_callback(
            lambda sql: inserting_threads.add(threading.get_ident()) if sql.startswith("INSERT OR IGNORE INTO requests") else None)

    w = LedgerWriter(tmp_path / "l.sqlite3", on_open=trace)
    for i in range(25):
        assert w.submit(row(i)) is True
    w.close()
    assert count(tmp_path / "l.sqlite3") == 25
    assert inserting_threads and threading.get_ident() not in inserting_threads
    assert inserting_threads == {w._thread.ident}
    assert w.written == 25 and w.enabled and w.last_error is None


def test_close_flushes_everything_queued_and_later_submits_are_ignored(tmp_path):
    w = LedgerWriter(tmp_path / "l.sqlite3", batch_size=7)
    for i in range(100):
        w.submit(row(i))
    w.close()
    assert count(tmp_path / "l.sqlite3") == 100
    assert w.submit(row(101)) is False
    w.close()  # twice is fine


def test_only_table_columns_are_written_and_odd_values_become_null(tmp_path):
    w = LedgerWriter(tmp_path / "l.sqlite3")
    w.submit({**row(1), "not_a_column": "x", "id": 99999, "figures": {"a": 1}, "reason": b"bytes"})
    w.close()
    conn = sqlite3.connect(tmp_path / "l.sqlite3")
    got = conn.execute("SELECT id, figures, reason, input_tokens FROM requests").fetchall()
    assert got == [(1, None, None, 1)]


@contextmanager
def held_write_lock(path):
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")
    holder.execute("INSERT INTO requests (ts) VALUES (0)")
    try:
        yield
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_a_lock_past_the_memory_wait_journals_the_rows_and_keeps_recording(tmp_path, caplog):
    """Issue 25: a lock held past the retries used to turn recording off until a restart, every row lost."""
    path = tmp_path / "l.sqlite3"
    db.connect(path).close()
    w = LedgerWriter(path, busy_timeout_s=0.05, retry_delays_s=(0.05,), memory_wait_s=0.2)
    try:
        with exclusive_lock(path):
            results = [w.submit(row(i)) for i in range(20)]  # returns at once: the writer is the one waiting
            assert results == [True] * 20
            wait_until(lambda: w.journaled == 20)
            assert w.pending == 0 and w.enabled and w.last_error is None and w.busy_since is not None
            assert not w.flush(timeout=0.2)  # not in the database yet
            assert w.submit(row(99)) is True  # still recording
        assert w.flush(timeout=30)
        assert w.journaled == 0 and w.busy_since is None and w.whole
    finally:
        w.close()
    assert count(path) == 21 and w.written == 21
    assert not w.journal.path.exists() and not w.journal.taken_path.exists()
    assert warnings_of(caplog) == []


def test_rows_journaled_after_a_failed_replay_are_written_too_when_the_lock_frees(tmp_path):
    """A try during the lock takes the journal (renamed, then the insert fails); rows journaled after
    it start a new journal. Both are written once it frees, in seconds (they waited 30 s more)."""
    path = tmp_path / "l.sqlite3"
    db.connect(path).close()
    w = LedgerWriter(path, busy_timeout_s=0.05, retry_delays_s=(0.05,), memory_wait_s=0.1)
    try:
        with exclusive_lock(path):
            for i in range(5):
                w.submit(row(i))
            wait_until(lambda: w.journaled == 5)
            wait_until(lambda: w.journal.taken_path.exists())  # a replay was tried under the lock
            for i in range(5, 9):
                w.submit(row(i))
            wait_until(lambda: w.journaled == 9 and w.journal.path.exists())
        assert w.flush(timeout=5)
        assert w.journaled == 0 and count(path) == 9
    finally:
        w.close()


def test_full_queue_drops_rows_without_blocking_or_raising(tmp_path, caplog):
    path = tmp_path / "l.sqlite3"
    db.connect(path).close()
    with held_write_lock(path):
        w = LedgerWriter(path, queue_size=3, busy_timeout_s=5)
        results = [w.submit(row(i)) for i in range(50)]
        assert results.count(True) <= 4  # the queue, plus one batch the writer may hold
        assert w.dropped == results.count(False) > 0
    w.close()
    assert w.enabled  # the lock was released in time: queued rows got written
    assert count(path) == results.count(True)
    assert sum("queue full" in r.getMessage() for r in warnings_of(caplog)) == 1


def test_corrupt_database_turns_recording_off(tmp_path, caplog):
    path = tmp_path / "l.sqlite3"
    path.write_bytes(b"this is not a sqlite database, just junk " * 200)
    w = LedgerWriter(path)
    assert w.flush()
    w.submit(row())
    w.close()
    assert not w.enabled and "not a database" in w.last_error
    assert len(warnings_of(caplog)) == 1
    assert path.read_bytes().startswith(b"this is not a sqlite database")


def _make_read_only(path) -> callable:
    if os.geteuid() != 0:
        path.chmod(0o444)
        return lambda: path.chmod(0o644)
    chattr = shutil.which("chattr")
    if not chattr or subprocess.run([chattr, "+i", str(path)], capture_output=True).returncode != 0:
        pytest.skip("running as root on a file system without chattr +i: cannot make a file read-only")
    return lambda: subprocess.run([chattr, "-i", str(path)], check=False)


def test_read_only_database_turns_recording_off(tmp_path, caplog):
    path = tmp_path / "l.sqlite3"
    db.connect(path).close()
    undo = _make_read_only(path)
    try:
        w = LedgerWriter(path)
        for i in range(5):
            w.submit(row(i))
        w.close()
    finally:
        undo()
    assert not w.enabled and "readonly" in (w.last_error or "").replace("-", "").replace(" ", "")
    assert len(warnings_of(caplog)) == 1
    assert count(path) == 0


def test_unwritable_directory_turns_recording_off(tmp_path, caplog):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    w = LedgerWriter(blocker / "sub" / "l.sqlite3")  # parent "directory" is a file
    w.submit(row())
    w.close()
    assert not w.enabled and w.last_error
    # recording off, then the one row that neither the ledger nor its journal (same folder) could take
    assert [r.getMessage().split(" (")[0] for r in warnings_of(caplog)] == [
        "ledger recording off", "ledger: 1 row(s) lost at the stop: neither the ledger nor the journal took them"]
    assert w.dropped == 1 and not w.whole


def test_disk_full_turns_recording_off(tmp_path, caplog):
    path = tmp_path / "l.sqlite3"

    def cap_size(conn):  # SQLite's own size cap: a real SQLITE_FULL, as on a full disk
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        conn.execute(f"PRAGMA max_page_count={pages}")

    w = LedgerWriter(path, on_open=cap_size, batch_size=1)
    for i in range(300):
        w.submit(row(i, client="agent/" + "x" * 100, reason="r" * 150))
    w.close()
    assert not w.enabled and "full" in w.last_error
    assert len(warnings_of(caplog)) == 1
    assert 0 < w.written < 300 and count(path) == w.written


def test_a_briefly_locked_database_is_retried_not_turned_off(tmp_path, caplog):
    """Other writers share the file (tool inventory, surgery log): a lock held a
    little past the busy timeout must not switch recording off for good."""
    import sqlite3
    import threading

    path = tmp_path / "l.sqlite3"
    db.connect(path).close()
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")
    release = threading.Timer(0.6, lambda: holder.execute("COMMIT"))
    release.start()
    try:
        w = LedgerWriter(path, busy_timeout_s=0.1, retry_delays_s=(0.2, 0.4, 0.8))
        assert w.submit(row(1)) is True
        assert w.flush(timeout=30)
        assert w.enabled and w.last_error is None
        w.close()
    finally:
        release.join()
        holder.close()
    assert count(path) == 1
    assert warnings_of(caplog) == []


def test_while_a_lock_is_retried_the_writer_says_since_when_and_what_waits(tmp_path):
    """The runtime's status reads ``busy_since`` and ``pending`` to say "ledger locked" while it lasts."""
    import time

    path = tmp_path / "l.sqlite3"
    db.connect(path).close()
    w = LedgerWriter(path, busy_timeout_s=0.05, retry_delays_s=(0.2,) * 50)  # retries for ~10 s at most
    assert w.flush(timeout=30) and w.busy_since is None
    before = time.time()
    with held_write_lock(path):
        assert w.submit(row(1)) and w.submit(row(2))
        deadline = time.monotonic() + 10
        while w.busy_since is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert w.busy_since is not None and w.busy_since >= before - 0.05  # since the first try, not its error
        assert w.pending == 2 and w.status()["busy_since"] == w.busy_since
    assert w.flush(timeout=30)
    assert w.busy_since is None and w.pending == 0 and w.enabled
    w.close()
    assert count(path) == 2
