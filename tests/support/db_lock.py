"""Another process holding an exclusive transaction on a SQLite database (the ledger), for as long as a test says."""

from __future__ import annotations

import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

_HOLDER = r"""
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)
conn.execute("BEGIN EXCLUSIVE")
conn.execute("CREATE TABLE IF NOT EXISTS _scalpel_test_lock (x)")
print("locked", flush=True)
sys.stdin.read()  # until the test closes our stdin
conn.execute("ROLLBACK")
print("released", flush=True)
"""


@contextmanager
def exclusive_lock(db: Path) -> Iterator[subprocess.Popen]:
    """A subprocess in ``BEGIN EXCLUSIVE`` on ``db`` (with a write pending) until the block ends."""
    proc = subprocess.Popen([sys.executable, "-c", _HOLDER, str(db)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline().strip() if proc.stdout else ""
        assert line == "locked", f"the lock holder did not take the lock: {line!r}"
        yield proc
    finally:
        if proc.stdin:
            proc.stdin.close()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
