"""Which file a tool call reads or writes, when that is unambiguous.

A superseded read must be provably the same file: paths are normalised
against the working directory Claude Code states, and a Bash command counts
as a read only when it plainly prints one named file (``cat F``,
``head``/``tail [-n N] F``, ``sed -n 'A,Bp' F``): no pipes, globs, variables,
redirections, ``~`` or ``cd``.
"""

from __future__ import annotations

import functools
import posixpath
import re
import shlex
from dataclasses import dataclass
from typing import Any

FILE_WRITERS = {"Edit": "file_path", "Write": "file_path", "MultiEdit": "file_path", "NotebookEdit": "notebook_path"}

_BASH_READERS = {"cat", "head", "tail", "sed"}
_UNSAFE = re.compile(r"[|;&<>`$*?\[\]{}~\n]|\bcd\b")


def _norm(path: str, cwd: str | None) -> str | None:
    if not path or "\x00" in path:
        return None
    if not path.startswith("/"):
        if not cwd:
            return None
        path = posixpath.join(cwd, path)
    return posixpath.normpath(path)


@functools.lru_cache(maxsize=8192)
def bash_read(command: str, cwd: str | None) -> tuple[str, bool] | None:
    """(file, whole_file) when ``command`` plainly prints one file, else None."""
    if not isinstance(command, str) or len(command) > 500 or _UNSAFE.search(command):
        return None
    try:
        argv = shlex.split(command)
    except ValueError:
        return None
    if not argv or argv[0] not in _BASH_READERS:
        return None
    prog, args = argv[0], argv[1:]
    if prog == "cat":
        if len(args) != 1 or args[0].startswith("-"):
            return None
        path = _norm(args[0], cwd)
        return (path, True) if path else None
    if prog in ("head", "tail"):
        files = []
        i = 0
        while i < len(args):
            a = args[i]
            if a in ("-n", "-c"):
                i += 2
                continue
            if re.fullmatch(r"-[nc]?\d+|-n[+]?\d+", a):
                i += 1
                continue
            if a.startswith("-"):
                return None
            files.append(a)
            i += 1
        if len(files) != 1:
            return None
        path = _norm(files[0], cwd)
        return (path, False) if path else None
    if prog == "sed":
        if len(args) != 3 or args[0] != "-n" or not re.fullmatch(r"\d+(,\d+)?p", args[1]):
            return None
        path = _norm(args[2], cwd)
        return (path, False) if path else None
    return None


@dataclass
class _Access:
    """One call's relation to a file: what it read or wrote."""

    path: str
    reads: bool
    writes: bool
    whole: bool  # a read of the whole file
    range_key: Any  # identifies a partial read (same key = same range)


def file_access(name: str, inp: Any, cwd: str | None, bash_cd_seen: bool) -> _Access | None:
    if not isinstance(inp, dict):
        return None
    if name == "Read":
        path = inp.get("file_path")
        if not isinstance(path, str):
            return None
        p = _norm(path, cwd)
        if p is None:
            return None
        offset, limit, pages = inp.get("offset"), inp.get("limit"), inp.get("pages")
        whole = offset in (None, 0, 1) and limit is None and pages is None
        return _Access(p, True, False, whole, (offset, limit, pages))
    key = FILE_WRITERS.get(name)
    if key is not None:
        path = inp.get(key)
        if not isinstance(path, str):
            return None
        p = _norm(path, cwd)
        return _Access(p, False, True, False, None) if p else None
    if name == "Bash":
        command = inp.get("command")
        if not isinstance(command, str):
            return None
        got = bash_read(command, None if bash_cd_seen else cwd)
        if got is None:
            return None
        path, whole = got
        return _Access(path, True, False, whole, ("bash", inp.get("command")))
    return None
