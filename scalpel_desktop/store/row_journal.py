"""Ledger rows that could not be written yet, kept in an append-only file beside the ledger.

Why: another program may hold the ledger's write lock for as long as it likes
(a sqlite3 shell in ``BEGIN EXCLUSIVE``, a backup or sync tool), and a proxy
may be stopped or killed meanwhile. The writer (``store/ledger.py``) keeps a
few rows in memory; past that, and at every stop that could not reach the
database, it appends them here, and writes them to the ledger when it frees.
A row is never lost to a lock and never written twice.

Format: one JSON object per line, a ledger row exactly as the writer would
insert it, its ``uid`` included (migration m009). Only what a ledger row
holds: counts, sizes, timings, ids and short labels, never message content,
header values or credentials (``pipeline/record.py`` builds the rows).

Crash safety and fsync policy: records are only ever appended, never
rewritten. Each ``append`` is one ``os.write`` of whole lines on a descriptor
opened ``O_APPEND`` (so appends from two threads never interleave), followed
by ``fsync`` of the file, and of its directory when the append created it;
``append`` says True only after that, and only then does the writer count the
rows as kept. A crash mid-append leaves at most one torn last line: the next
append starts on a fresh line, and ``take`` skips any line that is not a whole
row (``torn`` counts them).

Replay, idempotent: ``take`` renames the journal to ``<name>.replaying``
(appends meanwhile start a new journal) and yields its rows in batches; the writer
inserts them with ``INSERT OR IGNORE`` (the unique ``uid`` turns a row that
already reached the database into a no-op), commits, then calls ``done``,
which deletes the taken file. A crash in between leaves ``.replaying``
behind, and the next ``take`` returns it again, to the same no-op effect.

The file is bounded (``max_bytes``, 64 MB: about 100,000 rows): an append
past it keeps nothing and says False (the writer counts those rows dropped).
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any, Iterable, Iterator

from scalpel_desktop.atomicfile import fsync_dir

MAX_BYTES = 64 * 1024 * 1024
SUFFIX = "-rows.jsonl"
TAKEN = ".replaying"


def journal_path(database: Path | str) -> Path:
    """The journal that goes with a ledger file: ``ledger.sqlite3-rows.jsonl`` beside it."""
    database = Path(database)
    return database.with_name(database.name + SUFFIX)


class RowJournal:
    def __init__(self, path: Path | str, max_bytes: int = MAX_BYTES):
        self.path = Path(path)
        self.taken_path = self.path.with_name(self.path.name + TAKEN)
        self.max_bytes = max_bytes
        self.torn = 0  # lines skipped by ``take``: not a whole row (a crash mid-append)
        self.last_error: str | None = None  # why the latest append failed (None: it did not)
        self._lock = threading.Lock()
        self._rows = self._count(self.path) + self._count(self.taken_path)
        self._taken_lines = 0  # lines of the file ``take`` returned (``done`` subtracts them)

    @property
    def rows(self) -> int:
        """Rows waiting here (in the journal and in a taken file not yet done)."""
        with self._lock:
            return self._rows

    def append(self, rows: Iterable[dict[str, Any]]) -> bool:
        """Append ``rows`` and fsync them: True once they are on disk (also for none)."""
        data = b"".join(_line(r) for r in rows)
        if not data:
            return True
        n = data.count(b"\n")
        try:
            created = not self.path.exists()
            fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)  # RDWR: pread checks the last byte
            try:
                size = os.fstat(fd).st_size
                if size + len(data) > self.max_bytes:
                    self.last_error = f"the journal {self.path.name} is full ({self.max_bytes // (1024 * 1024)} MB)"
                    return False
                if size and os.pread(fd, 1, size - 1) != b"\n":
                    data = b"\n" + data  # a torn last line (a crash mid-append) stays alone on its line
                if created:
                    os.fchmod(fd, 0o600)
                os.write(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)
            if created:
                fsync_dir(self.path.parent)
        except OSError as e:
            self.last_error = f"{type(e).__name__}: {e}"
            return False
        self.last_error = None
        with self._lock:
            self._rows += n
        return True

    def take(self, batch: int = 500) -> Iterator[list[dict[str, Any]]]:
        """The rows of one file to replay, ``batch`` at a time: a taken file left by a crash, else the
        journal (renamed to the taken file first). Call ``done`` once they are all in the database."""
        if not self.taken_path.exists():
            try:
                os.replace(self.path, self.taken_path)
            except OSError:  # no journal (or one that cannot be moved: it stays where it is)
                return
        self._taken_lines = 0
        rows: list[dict[str, Any]] = []
        try:
            with open(self.taken_path, "rb") as f:
                for line in f:
                    if not line.strip():
                        continue
                    self._taken_lines += 1
                    row = _row(line)
                    if row is None:
                        self.torn += 1
                        continue
                    rows.append(row)
                    if len(rows) >= batch:
                        yield rows
                        rows = []
        except OSError as e:
            self.last_error = f"{type(e).__name__}: {e}"
            raise
        if rows:
            yield rows

    def done(self) -> None:
        """The taken rows are in the database: forget them."""
        try:
            self.taken_path.unlink()
        except FileNotFoundError:
            pass
        fsync_dir(self.path.parent)
        with self._lock:
            self._rows = max(0, self._rows - self._taken_lines)
        self._taken_lines = 0

    @staticmethod
    def _count(path: Path) -> int:
        try:
            with open(path, "rb") as f:
                return sum(1 for line in f if line.strip())
        except OSError:
            return 0


def _line(row: dict[str, Any]) -> bytes:
    text = json.dumps(row, separators=(",", ":"), ensure_ascii=False, default=lambda _v: None)
    return text.encode("utf-8") + b"\n"


def _row(line: bytes) -> dict[str, Any] | None:
    """One whole row, or None (a torn line, or one that is not a row)."""
    try:
        row = json.loads(line)
    except ValueError:
        return None
    return row if isinstance(row, dict) and isinstance(row.get("uid"), str) else None
