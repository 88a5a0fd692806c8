"""Content-addressed spill files: every byte the surgeon removes, kept on disk.

A spill file is ``<dir>/<sha[:2]>/<sha>`` where ``sha`` is the sha256 hex of
the content's bytes. Files are written to a temporary name, fsynced, made
0600 and renamed into place (then the directory is fsynced), so a file that
exists is complete. Directories are 0700: spill files hold raw tool output,
secrets included. ``put`` is idempotent and refreshes the file's time, so
content cut again recently survives ``gc`` by age.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from scalpel_desktop.paths import ensure_private_dir

_HEX64 = re.compile(r"[0-9a-f]{64}")


class SpillError(OSError):
    """The spill could not be written or read."""


@dataclass(frozen=True)
class SpillEntry:
    sha: str
    path: Path
    size: int
    mtime: float


@dataclass(frozen=True)
class GcResult:
    removed: int
    freed_bytes: int
    kept: int
    kept_bytes: int


class SpillStore:
    """``durable=False`` skips the fsyncs: for tests and benchmarks only, never for real cuts."""

    def __init__(self, directory: Path | str | None = None, *, durable: bool = True):
        if directory is None:
            from scalpel_desktop.paths import dirs

            directory = dirs().spill
        self.dir = Path(directory)
        self.durable = durable

    def path(self, sha: str) -> Path:
        if not _HEX64.fullmatch(sha or ""):
            raise ValueError(f"not a sha256 hex digest: {sha!r}")
        return self.dir / sha[:2] / sha

    def put(self, content: bytes) -> str:
        """Store ``content``; return its sha256. Raises SpillError when it cannot be made durable."""
        sha = hashlib.sha256(content).hexdigest()
        target = self.path(sha)
        try:
            if target.is_file() and target.stat().st_size == len(content) and target.read_bytes() == content:
                os.utime(target)
                return sha
            ensure_private_dir(self.dir)
            sub = ensure_private_dir(target.parent)
            fd, tmp = tempfile.mkstemp(dir=sub, prefix=".tmp-", suffix=".part")
            try:
                os.fchmod(fd, 0o600)
                with os.fdopen(fd, "wb") as f:
                    f.write(content)
                    f.flush()
                    if self.durable:
                        os.fsync(f.fileno())
                os.replace(tmp, target)
            except BaseException:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
                raise
            if self.durable:
                _fsync_dir(sub)
        except OSError as e:
            raise SpillError(f"cannot write spill file {target}: {e}") from e
        return sha

    def get(self, sha: str) -> bytes:
        """The content stored under ``sha``; FileNotFoundError when absent."""
        return self.path(sha).read_bytes()

    def has(self, sha: str) -> bool:
        try:
            return self.path(sha).is_file()
        except ValueError:
            return False

    def resolve(self, prefix: str) -> str:
        """The one full hash starting with ``prefix`` (at least 4 hex digits)."""
        prefix = prefix.strip().lower()
        if _HEX64.fullmatch(prefix):
            return prefix
        if len(prefix) < 4 or not re.fullmatch(r"[0-9a-f]+", prefix):
            raise KeyError(f"not a hash or hash prefix (>= 4 hex digits): {prefix!r}")
        sub = self.dir / prefix[:2]
        matches = sorted(p.name for p in sub.glob(prefix + "*") if _HEX64.fullmatch(p.name)) if sub.is_dir() else []
        if not matches:
            raise KeyError(f"no spill file matches {prefix!r}")
        if len(matches) > 1:
            raise KeyError(f"{prefix!r} is ambiguous ({len(matches)} spill files match)")
        return matches[0]

    def ls(self) -> list[SpillEntry]:
        """Every spill file, newest first."""
        out: list[SpillEntry] = []
        if not self.dir.is_dir():
            return out
        for sub in self.dir.iterdir():
            if not (sub.is_dir() and len(sub.name) == 2):
                continue
            for p in sub.iterdir():
                if _HEX64.fullmatch(p.name):
                    try:
                        st = p.stat()
                    except OSError:
                        continue
                    out.append(SpillEntry(p.name, p, st.st_size, st.st_mtime))
        out.sort(key=lambda e: (-e.mtime, e.sha))
        return out

    def gc(self, older_than_days: float | None = None, max_mb: float | None = None, now: float | None = None) -> GcResult:
        """Remove files older than ``older_than_days``, then the oldest until under ``max_mb``."""
        now = time.time() if now is None else now
        entries = self.ls()
        removed = freed = 0
        keep: list[SpillEntry] = []
        for e in entries:
            if older_than_days is not None and now - e.mtime > older_than_days * 86400:
                if _unlink(e.path):
                    removed += 1
                    freed += e.size
            else:
                keep.append(e)
        if max_mb is not None:
            cap = int(max_mb * 1024 * 1024)
            total = sum(e.size for e in keep)
            # keep is newest first: drop from the end (oldest) while over the cap
            while keep and total > cap:
                e = keep.pop()
                if _unlink(e.path):
                    removed += 1
                    freed += e.size
                total -= e.size
        # leftover temporaries of interrupted writes
        if self.dir.is_dir():
            for tmp in self.dir.glob("*/.tmp-*.part"):
                try:
                    if now - tmp.stat().st_mtime > 3600:
                        tmp.unlink()
                except OSError:
                    pass
        return GcResult(removed, freed, len(keep), sum(e.size for e in keep))


def _unlink(path: Path) -> bool:
    try:
        path.unlink()
        return True
    except FileNotFoundError:
        return False


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
