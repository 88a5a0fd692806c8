"""Private files: everything scalpel keeps is 0600 in 0700 dirs, whatever the umask.

Its files hold raw tool output, prompts, absolute paths and the control token.
Files scalpel writes itself are opened with mode 0600 (``write_atomic``, the
spill store); this module covers the ones a library creates (the log files of
``logging``, SQLite's database and its ``-wal``/``-shm`` files) and the
upgrade from an older version that left 0755/0644 behind (``tighten_home``,
once when the proxy starts).
"""

from __future__ import annotations

import logging.handlers
import os
import stat
from pathlib import Path

from scalpel_desktop.paths import (
    dirs,
    ensure_private_dir,
    make_private_parents,
    private_roots,
)

FILE_MODE = 0o600
DIR_MODE = 0o700
SQLITE_SUFFIXES = ("", "-wal", "-shm", "-journal")


def _narrow(path: str | os.PathLike, mode: int, fd: int | None = None) -> None:
    """Take away the bits ``mode`` lacks (group and others); never add one (a file the
    user made read-only stays read-only)."""
    try:
        cur = stat.S_IMODE(os.fstat(fd).st_mode if fd is not None else os.stat(path).st_mode)
        if cur & ~mode:
            if fd is not None:
                os.fchmod(fd, cur & mode)
            else:
                os.chmod(path, cur & mode)
    except OSError:
        pass


def touch_private(path: str | os.PathLike) -> Path:
    """Make ``path`` exist as a 0600 file (an existing one keeps its content and is
    narrowed), its dir 0700."""
    path = Path(path)
    make_private_parents(path.parent)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    except FileExistsError:
        _narrow(path, FILE_MODE)
        return path
    try:
        os.fchmod(fd, FILE_MODE)  # whatever the umask
    finally:
        os.close(fd)
    return path


def prepare_sqlite_file(path: str | os.PathLike) -> None:
    """Before ``sqlite3.connect``: the database exists 0600 (SQLite gives the
    ``-wal``/``-shm``/``-journal`` files it creates the database's own mode) and any
    left over from an older version are narrowed."""
    if os.fspath(path) in (":memory:", "") or os.fspath(path).startswith("file:"):
        return  # no file (an in-memory database), or a URI SQLite opens itself
    touch_private(path)
    for suffix in SQLITE_SUFFIXES[1:]:
        _narrow(f"{os.fspath(path)}{suffix}", FILE_MODE)


def open_private_append(path: str | os.PathLike, binary: bool = False, encoding: str | None = "utf-8"):
    """``open(path, "a")``, except that a new file is 0600 (and an old one narrowed)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, FILE_MODE)
    _narrow(path, FILE_MODE, fd)
    return os.fdopen(fd, "ab") if binary else os.fdopen(fd, "a", encoding=encoding)


class PrivateRotatingFileHandler(logging.handlers.RotatingFileHandler):
    """A ``RotatingFileHandler`` whose files (the log and each new one after a
    rollover) are created 0600: the log holds warnings with absolute paths."""

    def __init__(self, filename: str | os.PathLike, **kwargs):
        ensure_private_dir(Path(filename).parent)
        super().__init__(filename, **kwargs)

    def _open(self):
        return open_private_append(self.baseFilename, encoding=self.encoding)


def tighten_home() -> None:
    """Narrow every dir to 0700 and every file to 0600 below scalpel's own dirs,
    the spill dir excepted (its writer always made it private; it may hold many
    files). For installs an older version left at 0755/0644."""
    spill = dirs().spill
    for root in private_roots():
        if not root.is_dir():
            continue
        _narrow(root, DIR_MODE)
        for top, subdirs, files in os.walk(root):
            subdirs[:] = [d for d in subdirs if Path(top, d) != spill and not os.path.islink(os.path.join(top, d))]
            for d in subdirs:
                _narrow(os.path.join(top, d), DIR_MODE)
            for f in files:
                full = os.path.join(top, f)
                if not os.path.islink(full):
                    _narrow(full, FILE_MODE)
