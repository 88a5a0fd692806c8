"""The morning resume across a restart gets the free cut it gets without one (issue 26 step 1).

A real Claude Code 2.1.332 session (the scripted one, with a large superseded
read), then ``--resume`` 9 minutes after its last answer (the shared test
clock ``SCALPEL_TEST_CLOCK_FILE``, read by the proxy and the emulator: past
the 5-minute TTL). Once through a proxy that ran the whole time, once with
autopilot on (the process service backend standing in for the login service)
and the service stopped and started between the session and the resume: the
resume's first request must be cut at its ``ttl-expired`` break, certain (no
bet), removing the same tokens, and the emulator must bill the two resumes
alike (the two working directories' paths have the same length).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from scalpel_desktop import clock
from scalpel_desktop.config import Config
from scalpel_desktop.emulator.scripts import RESUME_TEXT, claude_code_session
from scalpel_desktop.emulator.testing import running_emulator
from scalpel_desktop.paths import dirs
from scalpel_desktop.runtime import Runtime
from scalpel_desktop.service import autopilot
from scalpel_desktop.service.probe import wait_healthy
from scalpel_desktop.service.process_backend import ProcessBackend
from tests.support import claude_bin, free_port
from tests.support.claude_cli import run_claude
from tests.surgery.test_realized_claude_cli import _rows, _wait_recorded, _workdir

PAUSE_S = 9 * 60


def _session(wd: Path, clock_file: Path, url: str, between=lambda: None) -> dict:
    """The session, ``between`` (a restart, or nothing: each waits for the session's rows), the resume
    9 minutes after its last answer.
    Returns the ledger row of the resume's first request of the main model."""
    clock.set_offset(clock_file, 0)
    rc, res, out, err = run_claude(url, wd, "Look at notes.txt and fix the TODO.")
    assert rc == 0 and res and not res["is_error"], (out[-1500:], err[-1500:])
    between()  # (it waits for every row of the session: read before it, the last could be missing)
    before = _rows(dirs().database)
    last = max(r["answered_at"] or 0 for r in before)
    clock.set_offset(clock_file, last + PAUSE_S - time.time())  # 9 minutes after the last answer
    rc, res2, out, err = run_claude(url, wd, "Check notes.txt again.", resume=res["session_id"])
    assert rc == 0 and res2 and not res2["is_error"] and res2["result"] == RESUME_TEXT, (out[-1500:], err[-1500:])
    seen = {r["id"] for r in before}
    main = before[-1]["model"]
    after = [r for r in _rows(dirs().database) if r["id"] not in seen and r["endpoint"] == "messages"
             and r["model"] == main]
    assert after, "the resume went through the proxy"
    return dict(after[0])


@pytest.mark.claude_cli
def test_a_resume_across_a_restart_gets_the_same_free_cut(tmp_path, monkeypatch):
    claude_bin()
    clock_file = tmp_path / "clock"
    monkeypatch.setenv("SCALPEL_TEST_CLOCK_FILE", str(clock_file))

    # The proxy runs the whole time (in this process).
    wd = _workdir(tmp_path / "run_a" / "proj")
    with running_emulator(claude_code_session(wd)) as emu:
        rt = Runtime(Config.load(), {"anthropic_upstream": emu.url}, port=0).start()
        try:
            steady = _session(wd, clock_file, f"http://127.0.0.1:{rt.port}",
                              between=lambda: _wait_recorded(len(emu.api_requests)))
            _wait_recorded(len(emu.api_requests))
        finally:
            rt.stop()
    dirs().database.unlink()  # the second run starts from an empty ledger
    for extra in ("-wal", "-shm"):
        Path(f"{dirs().database}{extra}").unlink(missing_ok=True)

    # Autopilot on, the service stopped and started between the session and the resume.
    monkeypatch.setenv("SCALPEL_TEST_SERVICE_BACKEND", "process")
    port = free_port()
    wd = _workdir(tmp_path / "run_b" / "proj")
    with running_emulator(claude_code_session(wd)) as emu:
        cfg = Config.load()
        cfg.set("port", port)
        cfg.set("anthropic_upstream", emu.url)
        cfg.save()
        backend = ProcessBackend()
        try:
            clock.set_offset(clock_file, 0)  # (the first run moved it on)
            assert autopilot.on(timeout=30).enabled

            def restart() -> None:
                _wait_recorded(len(emu.api_requests))
                first = backend.pid()
                backend.stop()  # SIGTERM, as a reboot or an upgrade sends it
                assert backend.pid() is None or backend.pid() != first
                assert backend.start().ok and wait_healthy(port, 30) is not None

            restarted = _session(wd, clock_file, f"http://127.0.0.1:{port}", between=restart)
            _wait_recorded(len(emu.api_requests))
        finally:
            autopilot.off()
            assert backend.pid() is None

    figures = json.loads(restarted["figures"] or "{}")
    print(f"steady: {steady['decision']} {steady['tokens_removed']} tokens ({steady['reason']}); "
          f"restarted: {restarted['decision']} {restarted['tokens_removed']} tokens ({restarted['reason']})")
    assert steady["decision"] == "cut" and "ttl-expired" in steady["reason"]
    assert restarted["decision"] == "cut" and "ttl-expired" in restarted["reason"]
    assert "guess" not in restarted["reason"] and not figures.get("guess") and not restarted["staked_usd"]
    assert restarted["tokens_removed"] == steady["tokens_removed"] > 0
    assert restarted["sent_bytes"] == steady["sent_bytes"]
    usage = ("input_tokens", "cache_write_5m", "cache_write_1h", "cache_read")
    assert [restarted[k] for k in usage] == [steady[k] for k in usage]  # the emulator billed them alike
