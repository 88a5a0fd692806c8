"""Content-addressed spill files: every byte the surgeon removes, kept on disk.

A spill file is ``<dir>/<sha[:2]>/<sha>`` where ``sha`` is the sha256 hex of
the content's bytes. Files are written to a temporary name, fsynced, made
0600 and renamed into place (then the directory is fsynced), so a file that
exists is complete. ``put_many`` does this for a whole cut at once: the
fsyncs of a batch are issued together, not one file after the other.
Directories are 0700: spill files hold raw tool output, secrets included. ``put`` is idempotent and refreshes the file's time, so
content cut again recently survives ``gc`` by age.

``gc`` never removes a file in ``live`` (unless forced): the spill files the
stubs of live conversations point at (``store/spill_refs.py`` finds them). A
stub tells the model where its original is; removing that file while the
conversation can still go on leaves the model pointed at nothing. Neither the
age limit nor the size cap overrides that; the cap then removes the oldest
files nobody live points at, and says by how much the dir stays over.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Collection, Sequence

from scalpel_desktop.atomicfile import fsync_dir
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
    kept_live: int = 0  # files the age limit or the cap would have removed, kept: a live stub points at them
    kept_live_bytes: int = 0
    removed_live: int = 0  # forced: files removed although a live stub points at them
    over_cap_bytes: int = 0  # what the dir stays over the cap, live files being all that is left to remove


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
        got = self.put_many([content])[0]
        if isinstance(got, SpillError):
            raise got
        return got

    def put_many(self, contents: Sequence[bytes]) -> list[str | SpillError]:
        """Store every content; per item its sha256, or the SpillError that kept it from disk.

        Durable like ``put``, but as one batch: every file of the batch is
        written first, then all are fsynced at once (concurrent fsyncs share
        the filesystem's journal commits), renamed into place, and each
        directory touched is fsynced once. When this returns, every item
        answered with a hash is on disk.
        """
        out: list[str | SpillError] = []
        pending: list[_Pending] = []
        batch: dict[str, int] = {}  # sha -> index of its first occurrence
        for i, content in enumerate(contents):
            sha = hashlib.sha256(content).hexdigest()
            out.append(sha)
            if sha in batch:
                continue  # written once; its fate is decided below
            batch[sha] = i
            target = self.path(sha)
            try:
                if target.is_file() and target.stat().st_size == len(content) and target.read_bytes() == content:
                    os.utime(target)
                    continue
                ensure_private_dir(self.dir)
                sub = ensure_private_dir(target.parent)
                fd, tmp = tempfile.mkstemp(dir=sub, prefix=".tmp-", suffix=".part")
            except OSError as e:
                out[i] = SpillError(f"cannot write spill file {target}: {e}")
                continue
            item = _Pending(i, target, fd, tmp)
            pending.append(item)
            try:
                os.fchmod(fd, 0o600)
                _write_all(fd, content)
            except OSError as e:
                item.error = e
        if self.durable:
            written = [p for p in pending if p.error is None]
            for item, err in zip(written, _each(_fsync_fd, [p.fd for p in written])):
                item.error = err
        subs: set[Path] = set()
        for item in pending:
            try:
                os.close(item.fd)
            except OSError as e:
                item.error = item.error or e
            if item.error is None:
                try:
                    os.replace(item.tmp, item.target)
                    subs.add(item.target.parent)
                    continue
                except OSError as e:
                    item.error = e
            _unlink(Path(item.tmp))
            out[item.index] = SpillError(f"cannot write spill file {item.target}: {item.error}")
        if self.durable and subs:
            _each(fsync_dir, sorted(subs))
        for i, got in enumerate(out):  # a repeat shares its first occurrence's outcome
            if isinstance(got, str) and batch[got] != i:
                out[i] = out[batch[got]]
        return out

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

    def gc(self, older_than_days: float | None = None, max_mb: float | None = None, now: float | None = None, *,
           live: Collection[str] = (), force: bool = False) -> GcResult:
        """Remove files older than ``older_than_days``, then the oldest until under ``max_mb``;
        never a file in ``live`` (what live conversations' stubs point at) unless ``force``."""
        now = time.time() if now is None else now
        live = frozenset(live)
        protected = frozenset() if force else live
        entries = self.ls()  # newest first
        gone: set[str] = set()
        spared: dict[str, int] = {}  # sha -> size: live files a limit would have removed
        removed = freed = removed_live = 0

        def remove(e: SpillEntry) -> None:
            nonlocal removed, freed, removed_live
            gone.add(e.sha)
            if _unlink(e.path):
                removed += 1
                freed += e.size
                removed_live += e.sha in live

        for e in entries:
            if older_than_days is not None and now - e.mtime > older_than_days * 86400:
                if e.sha in protected:
                    spared[e.sha] = e.size
                else:
                    remove(e)
        over_cap = 0
        if max_mb is not None:
            cap = int(max_mb * 1024 * 1024)
            total = sum(e.size for e in entries if e.sha not in gone)
            for e in reversed(entries):  # the oldest first, while over the cap
                if total <= cap:
                    break
                if e.sha in gone:
                    continue
                if e.sha in protected:
                    spared[e.sha] = e.size
                    continue
                remove(e)
                total -= e.size
            over_cap = max(0, total - cap)
        # leftover temporaries of interrupted writes
        if self.dir.is_dir():
            for tmp in self.dir.glob("*/.tmp-*.part"):
                try:
                    if now - tmp.stat().st_mtime > 3600:
                        tmp.unlink()
                except OSError:
                    pass
        keep = [e for e in entries if e.sha not in gone]
        return GcResult(removed, freed, len(keep), sum(e.size for e in keep), len(spared), sum(spared.values()),
                        removed_live, over_cap)


def _unlink(path: Path) -> bool:
    try:
        path.unlink()
        return True
    except FileNotFoundError:
        return False


def _fsync_fd(fd: int) -> OSError | None:
    try:
        os.fsync(fd)
    except OSError as e:
        return e
    return None


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


@dataclass
class _Pending:
    index: int
    target: Path
    fd: int
    tmp: str
    error: OSError | None = None


_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def _each(fn: Callable[[Any], Any], items: Sequence[Any]) -> list[Any]:
    """``[fn(x) for x in items]``, concurrently when there are several (fsyncs issued together
    are committed together: 64 files take about the time of a few)."""
    global _POOL
    if len(items) < 2:
        return [fn(x) for x in items]
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(max_workers=8, thread_name_prefix="scalpel-fsync")
    return list(_POOL.map(fn, items))
