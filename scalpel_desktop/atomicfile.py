"""Atomic file writes: a temporary file beside the target, then a rename.

One helper for every file scalpel rewrites (config, control token, service
files, Claude Code's settings, hook state). A missing parent dir is created 0700
(and scalpel's own dirs are narrowed to 0700: ``paths.make_private_parents``);
the file gets ``mode`` whatever the umask. Standard library only and cheap to
import: the hooks use it and must answer in well under 100 ms.
"""

from __future__ import annotations

import itertools
import os

from scalpel_desktop.paths import make_private_parents

_unique = itertools.count()


def write_atomic(path: str | os.PathLike, data: bytes, *, mode: int = 0o600, fsync: bool = True) -> None:
    """Replace ``path`` with ``data`` so that readers see the old or the new file, never half of one."""
    target = os.fspath(path)
    make_private_parents(os.path.dirname(target) or ".")
    tmp = f"{target}.{os.getpid()}.{next(_unique)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            if fsync:
                f.flush()
                os.fsync(f.fileno())
        os.chmod(tmp, mode)  # the umask may have narrowed it
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def fsync_dir(directory: str | os.PathLike) -> None:
    """Make a file's creation or removal in ``directory`` durable (POSIX); a no-op where directories
    cannot be opened."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
