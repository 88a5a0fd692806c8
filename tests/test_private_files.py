"""Every dir scalpel keeps is 0700 and every file 0600, whatever the umask.

End to end: ``scalpel start`` as a real process under a temporary SCALPEL_HOME
and umask 0o022, a generated agent session through it past the TTL (so the
surgery cuts and spills), a request to an unreachable upstream (so the log
writes a warning with an absolute URL), then stop; the whole tree is walked
while it runs (the SQLite -wal/-shm files exist then) and after. The same for
the platformdirs dirs when SCALPEL_HOME is unset, and the pieces on their own.
"""

from __future__ import annotations

import logging
import os
import random
import sqlite3
import stat
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from scalpel_desktop import clock
from scalpel_desktop.paths import (
    dirs,
    ensure_private_dir,
    make_private_parents,
    private_roots,
)
from scalpel_desktop.private_files import (
    PrivateRotatingFileHandler,
    prepare_sqlite_file,
    tighten_home,
    touch_private,
)
from scalpel_desktop.wire.jsoncodec import dumps
from tests.support import free_port


@pytest.fixture
def umask_022():
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def walk_modes(root: Path) -> tuple[dict[str, int], dict[str, int]]:
    """(dir -> mode, file -> mode) for everything at and below ``root``."""
    found_dirs = {str(root): stat.S_IMODE(os.stat(root).st_mode)}
    found_files: dict[str, int] = {}
    for top, subdirs, files in os.walk(root):
        for d in subdirs:
            found_dirs[os.path.join(top, d)] = stat.S_IMODE(os.lstat(os.path.join(top, d)).st_mode)
        for f in files:
            found_files[os.path.join(top, f)] = stat.S_IMODE(os.lstat(os.path.join(top, f)).st_mode)
    return found_dirs, found_files


def assert_private(root: Path) -> tuple[dict[str, int], dict[str, int]]:
    found_dirs, found_files = walk_modes(root)
    wide_dirs = {p: oct(m) for p, m in found_dirs.items() if m != 0o700}
    wide_files = {p: oct(m) for p, m in found_files.items() if m != 0o600}
    assert not wide_dirs and not wide_files, (wide_dirs, wide_files)
    return found_dirs, found_files


# -- the pieces ----------------------------------------------------------------------------


def test_missing_dirs_are_created_0700_and_scalpel_dirs_narrowed(tmp_path, umask_022):
    home = Path(os.environ["SCALPEL_HOME"])
    home.mkdir(mode=0o755)
    os.chmod(home, 0o755)  # as an older version left it
    deep = make_private_parents(home / "state" / "mcp-router")
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    assert stat.S_IMODE((home / "state").stat().st_mode) == 0o700
    assert stat.S_IMODE(deep.stat().st_mode) == 0o700


def test_dirs_outside_scalpel_are_left_alone_but_new_ones_are_private(tmp_path, umask_022):
    outside = tmp_path / "claude"
    outside.mkdir()
    os.chmod(outside, 0o755)
    make_private_parents(outside / "new" / "deeper")
    assert stat.S_IMODE(outside.stat().st_mode) == 0o755
    assert stat.S_IMODE((outside / "new").stat().st_mode) == 0o700
    assert stat.S_IMODE((outside / "new" / "deeper").stat().st_mode) == 0o700
    spill = ensure_private_dir(outside / "spill-elsewhere")  # a configured spill dir: private anyway
    assert stat.S_IMODE(spill.stat().st_mode) == 0o700


def test_platformdirs_roots_when_scalpel_home_is_unset(monkeypatch, umask_022):
    monkeypatch.delenv("SCALPEL_HOME")
    roots = private_roots()
    assert roots == [dirs().data, dirs().config, dirs().state]
    assert all(str(r).startswith(os.environ["HOME"]) for r in roots)  # the test's temporary XDG dirs


def test_log_files_are_0600_across_a_rollover(tmp_path, umask_022):
    path = Path(os.environ["SCALPEL_HOME"]) / "state" / "logs" / "proxy.log"
    handler = PrivateRotatingFileHandler(path, maxBytes=200, backupCount=2)
    logger = logging.getLogger("scalpel.test-private-log")
    logger.propagate = False
    logger.addHandler(handler)
    try:
        for i in range(20):
            logger.warning("warning %d about /home/someone/project/file.py", i)
    finally:
        logger.removeHandler(handler)
        handler.close()
    assert (path.parent / "proxy.log.1").exists()
    assert_private(Path(os.environ["SCALPEL_HOME"]))


def test_sqlite_files_take_the_database_mode(tmp_path, umask_022):
    db = Path(os.environ["SCALPEL_HOME"]) / "data" / "ledger.sqlite3"
    prepare_sqlite_file(db)
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("CREATE TABLE t (x)")
    conn.execute("INSERT INTO t VALUES (1)")
    conn.commit()
    try:
        assert Path(f"{db}-wal").exists() and Path(f"{db}-shm").exists()
        assert_private(Path(os.environ["SCALPEL_HOME"]))
    finally:
        conn.close()


def test_an_older_install_is_tightened_when_the_proxy_starts(umask_022):
    home = Path(os.environ["SCALPEL_HOME"])
    for d in ("config", "state/logs", "data/spill/ab"):
        (home / d).mkdir(parents=True)
    for f in ("config/config.json", "state/logs/proxy.log", "data/ledger.sqlite3"):
        (home / f).write_text("{}")
    for p in (home, home / "config", home / "state", home / "state" / "logs", home / "data"):
        os.chmod(p, 0o755)
    tighten_home()
    found_dirs, found_files = walk_modes(home)
    spill = str(home / "data" / "spill")
    assert all(m == 0o700 for p, m in found_dirs.items() if not p.startswith(spill))
    assert all(m == 0o600 for m in found_files.values())
    touch_private(home / "state" / "logs" / "service.log")
    assert stat.S_IMODE((home / "state" / "logs" / "service.log").stat().st_mode) == 0o600


def test_in_process_runtime_with_platformdirs(monkeypatch, umask_022):
    """SCALPEL_HOME unset: the platformdirs data, config and state dirs (under the
    test's temporary XDG dirs) end up private too."""
    from scalpel_desktop.config import Config
    from scalpel_desktop.emulator.testing import running_emulator
    from scalpel_desktop.runtime import Runtime

    monkeypatch.delenv("SCALPEL_HOME")
    with running_emulator() as emu:
        rt = Runtime(Config.load(), {"anthropic_upstream": emu.url}, port=0).start()
        try:
            _post(f"http://127.0.0.1:{rt.port}", dumps({"model": "claude-sonnet-4-6", "max_tokens": 10,
                  "messages": [{"role": "user", "content": "hi"}]}), {})
            _wait_rows(dirs().database, 1)
        finally:
            rt.stop()
    for root in private_roots():
        assert root.is_dir()
        assert_private(root)


# -- the real proxy -----------------------------------------------------------------------


def _post(url: str, body: bytes, headers: dict, path: str = "/v1/messages?beta=true") -> int:
    req = urllib.request.Request(url + path, data=body, method="POST",
                                 headers={"content-type": "application/json", **headers, "x-api-key": "sk-ant-test"})
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            resp.read()
            return resp.status
    except urllib.error.HTTPError as e:
        e.read()
        return e.code


def _rows(db: Path, table: str = "requests") -> int:
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    except sqlite3.Error:
        return 0
    try:
        return conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
    except sqlite3.Error:
        return 0
    finally:
        conn.close()


def _wait_rows(db: Path, n: int, timeout: float = 30.0) -> None:
    """The recorder is the last stage: n rows means every stage has seen n responses."""
    deadline = time.monotonic() + timeout
    while _rows(db) < n and time.monotonic() < deadline:
        time.sleep(0.02)
    assert _rows(db) >= n


def _wait_listening(proc: subprocess.Popen, url: str) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.stderr.read()
        try:
            urllib.request.urlopen(url + "/", timeout=1).read()
            return
        except urllib.error.HTTPError:
            return
        except OSError:
            time.sleep(0.05)
    raise AssertionError("the proxy never listened")


def test_real_proxy_under_umask_022_leaves_only_private_files(tmp_path, monkeypatch, umask_022):
    from scalpel_desktop.cli import main as scalpel_main
    from scalpel_desktop.emulator.testing import running_emulator
    from tests.invariants.agent_sessions import generate
    from tests.invariants.test_cost import reaches_a_free_batch

    home = Path(os.environ["SCALPEL_HOME"])
    clock_file = tmp_path / "clock"
    clock.set_offset(clock_file, 0)
    monkeypatch.setenv("SCALPEL_TEST_CLOCK_FILE", str(clock_file))
    assert scalpel_main(["config", "set", "policy", "cold"]) == 0
    session = generate(random.Random(7), main_turns=40)
    assert reaches_a_free_batch(session)

    with running_emulator("text") as emu:
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        proc = subprocess.Popen(
            [sys.executable, "-m", "scalpel_desktop", "start", "--quiet", "--port", str(port),
             "--anthropic-upstream", emu.url, "--openai-upstream", f"http://127.0.0.1:{free_port()}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=dict(os.environ), umask=0o022,
        )
        try:
            _wait_listening(proc, url)
            for i, req in enumerate(session.requests):
                clock.set_offset(clock_file, req.at - time.time())
                assert _post(url, dumps(req.body), req.headers) == 200
                _wait_rows(dirs().database, i + 1)
            # unreachable upstream: a 502 and a warning naming it in proxy.log
            assert _post(url, b'{"model":"gpt-5","messages":[]}', {}, "/openai/v1/chat/completions") == 502
            log_file = dirs().logs / "proxy.log"
            deadline = time.monotonic() + 10
            while "unreachable" not in (log_file.read_text() if log_file.exists() else "") and time.monotonic() < deadline:
                time.sleep(0.02)
            assert "WARNING" in log_file.read_text() and "unreachable" in log_file.read_text()
            assert _rows(dirs().database, "cuts") > 0, "the session made no cut"
            _, running_files = assert_private(home)
            assert any(p.endswith("-wal") for p in running_files)
        finally:
            proc.terminate()
            assert proc.wait(timeout=20) == 0
    found_dirs, found_files = assert_private(home)
    spilled = [p for p in found_files if p.startswith(str(dirs().spill))]
    assert spilled, "no spill file"
    for expected in (dirs().database, dirs().config_file, dirs().token_file, dirs().logs / "proxy.log"):
        assert str(expected) in found_files
    for expected in (home, dirs().data, dirs().config, dirs().state, dirs().logs, dirs().spill):
        assert str(expected) in found_dirs


def test_an_in_memory_database_creates_no_file(tmp_path, monkeypatch):
    from scalpel_desktop.store.db import connect

    monkeypatch.chdir(tmp_path)
    connect(Path(":memory:")).close()
    assert list(tmp_path.iterdir()) == []
