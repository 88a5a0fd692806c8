"""The ``exclude_dirs`` setting: conversations under these working directories are never changed."""

from __future__ import annotations

import os


def excluded(cwd: str | None, dirs: list[str] | None) -> bool:
    """True when ``cwd`` is one of ``dirs`` or below one."""
    if not cwd or not dirs:
        return False
    cwd_n = os.path.normpath(os.path.expanduser(cwd))
    for d in dirs:
        d_n = os.path.normpath(os.path.expanduser(str(d)))
        if cwd_n == d_n or cwd_n.startswith(d_n.rstrip("/") + "/"):
            return True
    return False
