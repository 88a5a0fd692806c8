"""The pipeline exactly as it ships (``assemble.default_stages``, nothing substituted),
with a real Claude Code 2.1.332 session: the tool filter and the surgery act on
the same requests.

A built-in is removed (``--force``) and the filter is on; the session runs, sits
idle past any TTL (the shared test clock, ``SCALPEL_TEST_CLOCK_FILE``), and is
resumed. Then: the removed declaration never reached the upstream, the resumed
turns carry superseded-read stubs, every body was accepted, the ledger recorded
both kinds of realized saving, and every cut's spill file holds its original.
And every ledger row's decision is what its bytes show: changed exactly when
sent != received, naming the filter, new cuts and replayed stubs together.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from scalpel_desktop import clock
from scalpel_desktop.cli import main as scalpel_main
from scalpel_desktop.config import Config
from scalpel_desktop.decisions import changes_of, is_change
from scalpel_desktop.emulator.scripts import RESUME_TEXT, claude_code_session, prepare_workdir
from scalpel_desktop.emulator.testing import running_emulator
from scalpel_desktop.paths import dirs
from scalpel_desktop.runtime import Runtime
from scalpel_desktop.store.spill import SpillStore
from scalpel_desktop.surgery.doom import is_stub
from scalpel_desktop.wire.formats import view_for
from tests.support import claude_bin
from tests.support.claude_cli import run_claude

REMOVED = "ReportFindings"


def _workdir(root: Path) -> Path:
    wd = prepare_workdir(root / "proj")
    notes = wd / "notes.txt"  # large enough that its superseded read is worth a batch
    notes.write_text(notes.read_text() + "".join(
        f"Background paragraph {i}: the greeting module prints a friendly message.\n" for i in range(160)))
    return wd


def _ledger_rows(db: Path) -> list[sqlite3.Row]:
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    except sqlite3.Error:
        return []
    conn.row_factory = sqlite3.Row
    try:
        return conn.execute("SELECT * FROM requests ORDER BY id").fetchall()
    except sqlite3.Error:
        return []
    finally:
        conn.close()


def _wait_recorded(db: Path, n: int) -> None:
    """The recorder is the last stage: once n rows exist, every stage has seen n responses."""
    deadline = time.monotonic() + 30
    while len(_ledger_rows(db)) < n and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(_ledger_rows(db)) >= n


@pytest.mark.claude_cli
def test_filter_and_surgery_together_through_the_shipped_pipeline(tmp_path, monkeypatch):
    claude_bin()
    clock_file = tmp_path / "clock"
    clock.set_offset(clock_file, 0)
    monkeypatch.setenv("SCALPEL_TEST_CLOCK_FILE", str(clock_file))
    assert scalpel_main(["tools", "remove", REMOVED, "--force"]) == 0
    assert scalpel_main(["tools", "on"]) == 0

    wd = _workdir(tmp_path)
    with running_emulator(claude_code_session(wd)) as emu:
        rt = Runtime(Config.load(), {"anthropic_upstream": emu.url}, port=0).start()
        try:
            url = f"http://127.0.0.1:{rt.port}"
            rc, res, out, err = run_claude(url, wd, "Look at notes.txt and fix the TODO.")
            assert rc == 0 and res and not res["is_error"], (out[-1500:], err[-1500:])
            _wait_recorded(dirs().database, len(emu.api_requests))
            clock.set_offset(clock_file, 2 * 3600)  # idle past any TTL, for proxy and emulator alike
            before = len(emu.received)
            rc, res2, out, err = run_claude(url, wd, "Check notes.txt again.", resume=res["session_id"])
            assert rc == 0 and res2 and not res2["is_error"], (out[-1500:], err[-1500:])
            assert res2["result"] == RESUME_TEXT
            _wait_recorded(dirs().database, len(emu.api_requests))
        finally:
            rt.stop()

    assert emu.api_requests and all(r.status == 200 for r in emu.api_requests)
    for r in emu.api_requests:  # the filter held on every request, the resumed ones included
        assert REMOVED not in {t.get("name") for t in r.json().get("tools") or []}
    resumed = [r for r in emu.received[before:] if r.endpoint == "messages" and r.track == "resume"]
    stubs = [x for r in resumed for x in view_for("messages", r.json()).tool_results if is_stub(x.content)]
    assert stubs and all(x.name == "Read" and "superseded read" in x.text for x in stubs)

    rows = _ledger_rows(dirs().database)
    # Decisions as the bytes show them: a row is changed exactly when the bytes sent differ
    # from those received (the ledger keeps their sizes), and it names every change.
    for r in rows:
        assert (r["body_bytes"] != r["sent_bytes"]) == is_change(r["decision"]), (r["decision"], r["reason"])
    labels = {r["decision"] for r in rows}
    print("decisions:", sorted(labels))
    assert "cut+filtered" in labels and "replayed+filtered" in labels and "filtered" in labels
    upstream_stubs = sum(1 for r in emu.api_requests
                         if any(is_stub(x.content) for x in view_for("messages", r.json()).tool_results))
    carrying = sum(1 for r in rows if changes_of(r["decision"]) & {"cut", "replayed"})
    assert carrying == upstream_stubs > 0  # every request that carried a stub says so
    assert any((r["realized_tokens"] or 0) > 0 for r in rows)
    conn = sqlite3.connect(dirs().database)
    kinds = {k for (k,) in conn.execute("SELECT DISTINCT name FROM tool_filter_savings")}
    cuts = conn.execute("SELECT original_sha256 FROM cuts").fetchall()
    conn.close()
    assert REMOVED in kinds
    spill = SpillStore(dirs().spill)
    assert cuts and all(spill.get(sha) is not None for (sha,) in cuts)
