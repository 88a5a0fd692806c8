"""Spill files: content-addressed, private, durable, idempotent; ls, resolve, gc."""

from __future__ import annotations

import hashlib
import os
import stat
import time

import pytest

from scalpel_desktop.paths import dirs
from scalpel_desktop.store.spill import SpillError, SpillStore


def test_put_get_modes_and_idempotence():
    s = SpillStore()
    assert s.dir == dirs().spill
    data = "héllo \x00 world".encode()
    sha = s.put(data)
    assert sha == hashlib.sha256(data).hexdigest()
    p = s.path(sha)
    assert p == s.dir / sha[:2] / sha and p.read_bytes() == data == s.get(sha)
    assert stat.S_IMODE(p.stat().st_mode) == 0o600
    assert stat.S_IMODE(p.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(s.dir.stat().st_mode) == 0o700
    old = time.time() - 10 * 86400
    os.utime(p, (old, old))
    assert s.put(data) == sha  # again: same file, time refreshed
    assert p.stat().st_mtime > old + 86400
    assert [e.sha for e in s.ls()] == [sha]
    assert not list(p.parent.glob(".tmp-*"))


def test_corrupt_file_is_rewritten():
    s = SpillStore()
    sha = s.put(b"abcdef")
    s.path(sha).write_bytes(b"abcxyz")
    assert s.put(b"abcdef") == sha and s.get(sha) == b"abcdef"


def test_unwritable_dir_raises_spill_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a dir")
    with pytest.raises(SpillError):
        SpillStore(blocker / "spill").put(b"x")


def test_bad_hash_and_resolve():
    s = SpillStore()
    with pytest.raises(ValueError):
        s.path("../../etc/passwd")
    sha = s.put(b"one")
    assert s.resolve(sha[:8]) == sha and s.resolve(sha) == sha
    for bad in ("zz", "abc", "0000ffff"):
        with pytest.raises(KeyError):
            s.resolve(bad)


def test_gc_by_age_then_size():
    s = SpillStore()
    now = time.time()
    shas = []
    for i, age_days in enumerate([40, 20, 10, 1]):
        sha = s.put(bytes([i]) * 1024 * 512)  # 0.5 MB each
        t = now - age_days * 86400
        os.utime(s.path(sha), (t, t))
        shas.append(sha)
    r = s.gc(older_than_days=30, now=now)
    assert (r.removed, r.kept) == (1, 3) and not s.has(shas[0])
    r = s.gc(max_mb=1.0, now=now)  # 1.5 MB left: the oldest goes
    assert r.removed == 1 and not s.has(shas[1]) and s.has(shas[2]) and s.has(shas[3])
    assert r.kept_bytes <= 1024 * 1024
    assert s.gc(older_than_days=30, max_mb=1.0, now=now).removed == 0


def _aged(s: SpillStore, now: float, ages_days: list[float]) -> list[str]:
    shas = []
    for i, age_days in enumerate(ages_days):
        sha = s.put(bytes([100 + i]) * 1024 * 512)  # 0.5 MB each
        t = now - age_days * 86400
        os.utime(s.path(sha), (t, t))
        shas.append(sha)
    return shas


def test_gc_never_removes_a_live_file_by_age_or_by_the_cap():
    s = SpillStore()
    now = time.time()
    old_live, old_dead, new_dead, new_live = _aged(s, now, [40, 35, 2, 1])
    live = {old_live, new_live}
    r = s.gc(older_than_days=30, now=now, live=live)
    assert s.has(old_live) and not s.has(old_dead)
    assert (r.removed, r.removed_live, r.kept, r.kept_live) == (1, 0, 3, 1)  # old_live spared by the age limit
    assert r.kept_live_bytes == 512 * 1024
    r = s.gc(max_mb=0.6, now=now, live=live)  # 1.5 MB left: the cap passes over the live ones, takes new_dead
    assert s.has(old_live) and s.has(new_live) and not s.has(new_dead)
    assert (r.removed, r.kept_live) == (1, 2)  # both live files were in the cap's way, both spared
    assert r.over_cap_bytes == 1024 * 1024 - int(0.6 * 1024 * 1024)  # only live files are left, over the cap
    r = s.gc(older_than_days=0, max_mb=0, now=now, live=live)
    assert r.removed == 0 and r.kept_live == 2 and s.has(old_live) and s.has(new_live)
    assert s.gc(max_mb=1.0, now=now, live=live).kept_live == 0  # under the cap: nothing was in the way


def test_gc_forced_removes_live_files_and_counts_them():
    s = SpillStore()
    now = time.time()
    old_live, old_dead = _aged(s, now, [40, 35])
    r = s.gc(older_than_days=30, now=now, live={old_live}, force=True)
    assert not s.has(old_live) and not s.has(old_dead)
    assert (r.removed, r.removed_live, r.kept_live) == (2, 1, 0)


def test_durable_put_fsyncs_file_and_dir(monkeypatch):
    calls = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (calls.append(fd), real(fd))[1])
    SpillStore().put(b"durable")
    assert len(calls) == 2  # the file, then its directory
    calls.clear()
    SpillStore(dirs().spill / "fast", durable=False).put(b"not durable")
    assert calls == []


def test_put_many_is_one_durable_batch(monkeypatch):
    calls = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (calls.append(fd), real(fd))[1])
    s = SpillStore()
    contents = [bytes([i]) * (100 + i) for i in range(20)]
    shas = s.put_many(contents + [contents[3]])  # a repeat is written once
    assert shas[:20] == [hashlib.sha256(c).hexdigest() for c in contents] and shas[20] == shas[3]
    assert all(s.get(sha) == c for sha, c in zip(shas, contents))
    dirs_touched = {sha[:2] for sha in shas}
    assert len(calls) == 20 + len(dirs_touched)  # each file once, each directory once
    assert all(oct(s.path(sha).stat().st_mode & 0o777) == oct(0o600) for sha in shas)
    assert not list(s.dir.glob("*/.tmp-*"))


def test_put_many_reports_each_failure(tmp_path):
    blocker = tmp_path / "blocked"
    blocker.write_text("a file where the spill dir should be")
    got = SpillStore(blocker).put_many([b"a", b"b"])
    assert all(isinstance(g, SpillError) for g in got)
    assert SpillStore(tmp_path / "ok").put_many([]) == []
