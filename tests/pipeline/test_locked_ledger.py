"""A real Claude Code 2.1.332 session through the shipped proxy while another process holds
an exclusive transaction on the ledger database, the whole session long.

The tool filter is on (a built-in removed with ``--force``) and the surgery's
cold policy is on, so the session's first request needs a pin and the resumed
one, past the TTL, a cut-log row. With the database locked: the session
completes; its requests reach the upstream unfiltered and with no new cut
(nothing could be stored in time), and consistently so (the session's pin is
stored EMPTY once the lock is gone: the tools it started with stay); the
ledger rows are written once the lock is released. Then, unlocked, the
session is resumed again: the due cut is made and logged, its spill holds the
original. Durations are not asserted here (``benchmarks/stall.py`` prints them).
"""

from __future__ import annotations

import json
import sqlite3

import pytest

from scalpel_desktop import clock
from scalpel_desktop.cli import main as scalpel_main
from scalpel_desktop.config import Config
from scalpel_desktop.emulator.scripts import RESUME_TEXT, claude_code_session
from scalpel_desktop.emulator.testing import running_emulator
from scalpel_desktop.paths import dirs
from scalpel_desktop.runtime import Runtime
from scalpel_desktop.store.spill import SpillStore
from scalpel_desktop.surgery.doom import is_stub
from scalpel_desktop.wire.formats import view_for
from tests.pipeline.test_shipped_assembly import REMOVED, _ledger_rows, _wait_recorded, _workdir
from tests.support import claude_bin
from tests.support.claude_cli import run_claude
from tests.support.db_lock import exclusive_lock


def _stubs(reqs) -> list:
    return [x for r in reqs if r.endpoint == "messages"
            for x in view_for("messages", r.json()).tool_results if is_stub(x.content)]


def _tool_names(r) -> frozenset[str]:
    return frozenset(t.get("name") for t in r.json().get("tools") or [])


@pytest.mark.claude_cli
def test_a_whole_session_under_an_exclusive_ledger_lock(tmp_path, monkeypatch):
    claude_bin()
    clock_file = tmp_path / "clock"
    clock.set_offset(clock_file, 0)
    monkeypatch.setenv("SCALPEL_TEST_CLOCK_FILE", str(clock_file))
    assert scalpel_main(["tools", "remove", REMOVED, "--force"]) == 0
    assert scalpel_main(["tools", "on"]) == 0
    # A generous write budget: an fsynced spill on a busy test machine may take more than the shipped
    # 50 ms (no cut then); the lock makes every database write fail or time out whatever the budget.
    assert scalpel_main(["config", "set", "write_wait_ms", "2000"]) == 0
    db = dirs().database

    wd = _workdir(tmp_path)
    with running_emulator(claude_code_session(wd)) as emu:
        rt = Runtime(Config.load(), {"anthropic_upstream": emu.url}, port=0).start()
        try:
            url = f"http://127.0.0.1:{rt.port}"
            with exclusive_lock(db):
                rc, res, out, err = run_claude(url, wd, "Look at notes.txt and fix the TODO.")
                assert rc == 0 and res and not res["is_error"], (out[-1500:], err[-1500:])
                first = list(emu.api_requests)
                assert len(_ledger_rows(db)) == 0  # nothing could be written meanwhile
            _wait_recorded(db, len(first))  # ... and every row lands once the lock is gone

            clock.set_offset(clock_file, 2 * 3600)  # idle past any TTL: the resume has a cut due
            before = len(emu.received)
            with exclusive_lock(db):
                rc, res2, out, err = run_claude(url, wd, "Check notes.txt again.", resume=res["session_id"])
                assert rc == 0 and res2 and not res2["is_error"], (out[-1500:], err[-1500:])
                assert res2["result"] == RESUME_TEXT
            locked_resume = [r for r in emu.received[before:] if r.endpoint == "messages"]
            _wait_recorded(db, len(emu.api_requests))

            clock.set_offset(clock_file, 4 * 3600)  # unlocked, past the TTL again: now the cut is made
            before = len(emu.received)
            rc, res3, out, err = run_claude(url, wd, "Check notes.txt again.", resume=res["session_id"])
            assert rc == 0 and res3 and not res3["is_error"], (out[-1500:], err[-1500:])
            unlocked_resume = [r for r in emu.received[before:] if r.endpoint == "messages"]
            _wait_recorded(db, len(emu.api_requests))
        finally:
            rt.stop()

    assert emu.api_requests and all(r.status == 200 for r in emu.api_requests)
    # Forwarded unchanged, and consistently: the session kept the tools it started with.
    main_tools = {_tool_names(r) for r in emu.api_requests if r.json().get("tools")}
    assert main_tools and all(REMOVED in names for names in main_tools)
    assert locked_resume and _stubs(locked_resume) == []  # no cut while its log row could not be written

    conn = sqlite3.connect(db)
    pin = conn.execute("SELECT enabled, names FROM tool_session_pins WHERE session = ?",
                       (res["session_id"],)).fetchone()
    cuts = conn.execute("SELECT tool_use_id, original_sha256 FROM cuts").fetchall()
    conn.close()
    assert pin is not None and pin[0] == 0 and json.loads(pin[1]) == []  # the pin stored matches what was sent

    stubs = _stubs(unlocked_resume)
    assert stubs and all(x.name == "Read" and "superseded read" in x.text for x in stubs)
    assert {x.id for x in stubs} <= {tid for tid, _ in cuts}
    spill = SpillStore(dirs().spill)
    assert cuts and all(spill.get(sha) is not None for _, sha in cuts)
    rows = _ledger_rows(db)
    assert len(rows) >= len(emu.api_requests) and any("cut" in (r["decision"] or "") for r in rows)
