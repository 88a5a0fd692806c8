"""runtime_state.py: the one-instance lock, where the running proxy is, the control token, the counters."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from types import SimpleNamespace

import pytest

from scalpel_desktop.paths import dirs
from scalpel_desktop.runtime_state import InstanceLock, Stats, ensure_token, read_holder


@pytest.mark.skipif(os.name == "nt", reason="flock")
def test_the_lock_is_exclusive_across_processes_and_names_its_holder(tmp_path):
    path = tmp_path / "run" / "scalpel.lock"
    lock = InstanceLock(path)
    assert lock.acquire()
    lock.describe({"pid": os.getpid(), "port": 8787})
    probe = ("import sys; from pathlib import Path; from scalpel_desktop.runtime_state import InstanceLock;"
             "sys.exit(0 if InstanceLock(Path(sys.argv[1])).acquire() else 3)")
    other = subprocess.run([sys.executable, "-c", probe, str(path)], check=False)
    assert other.returncode == 3
    assert json.loads(path.read_text()) == {"pid": os.getpid(), "port": 8787}
    lock.release()
    assert subprocess.run([sys.executable, "-c", probe, str(path)], check=False).returncode == 0
    lock.release()  # twice is harmless


def test_read_holder_prefers_the_runtime_file_then_the_lock_file():
    d = dirs()
    assert read_holder() == (None, None)
    d.lock_file.parent.mkdir(parents=True, exist_ok=True)
    d.lock_file.write_text(json.dumps({"pid": 11, "port": 22}))
    assert read_holder() == (11, 22)
    d.runtime_file.parent.mkdir(parents=True, exist_ok=True)
    d.runtime_file.write_text(json.dumps({"pid": 33, "port": 44, "version": "x"}))
    assert read_holder() == (33, 44)
    d.runtime_file.write_text("{broken")
    assert read_holder() == (11, 22)
    d.lock_file.write_text(json.dumps({"pid": None, "port": 1}))
    assert read_holder() == (None, None)


def test_ensure_token_creates_a_private_token_once():
    token = ensure_token()
    assert len(token) >= 40 and ensure_token() == token
    path = dirs().token_file
    assert path.read_text().strip() == token
    if os.name != "nt":
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    path.write_text("\n")  # an empty file gets a new token
    assert ensure_token() not in ("", token)


def finished(status=200, piped=True, error="", api="anthropic", usage=None):
    return SimpleNamespace(status=status, piped=piped, error=error, api=api, usage=usage)


def test_stats_count_requests_errors_and_tokens():
    s = Stats()
    s.record(finished(usage=SimpleNamespace(prompt_tokens=100, output_tokens=7)))
    s.record(finished(status=529, api="anthropic"))
    s.record(finished(status=0, piped=False, error="connection refused"))
    snap = s.snapshot()
    assert snap == {"requests": 3, "api_requests": 2, "errors": 2,
                    "tokens_in": 100, "tokens_out": 7, "last_error": "connection refused"}
    s.record(finished(status=404, api="openai"))
    assert s.snapshot()["last_error"] == "HTTP 404 from openai upstream"
