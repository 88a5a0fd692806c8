"""The realized saving `scalpel report` shows equals what the cuts took off the bill (issue 10, part 1).

A real Claude Code 2.1.332 session (the scripted one, with a large superseded
read), idle past any TTL (the shared test clock ``SCALPEL_TEST_CLOCK_FILE``,
which the proxy and the emulator both read), then ``--resume``: run twice with
the same script and working directory, once through the proxy as it ships
(calibration, tool filter, surgery, ledger) to one emulator, once straight to
another. The report's realized saving (bytes removed x each conversation's
tokens per byte measured from its usage, at the tier its usage shows) must be
within 2% of the difference between the two emulator bills, both priced with
the same price table; and every realized row says how it was obtained.
"""

from __future__ import annotations

import contextlib
import io
import json
import sqlite3
import time
from pathlib import Path

import pytest

from scalpel_desktop import clock
from scalpel_desktop.accounting.prices import PriceTable
from scalpel_desktop.cli import main as scalpel_main
from scalpel_desktop.config import Config
from scalpel_desktop.emulator.scripts import RESUME_TEXT, claude_code_session, prepare_workdir
from scalpel_desktop.emulator.testing import running_emulator
from scalpel_desktop.paths import dirs
from scalpel_desktop.runtime import Runtime
from tests.support import claude_bin
from tests.support.claude_cli import run_claude

PRICES = PriceTable.load()


def _workdir(root: Path) -> Path:
    wd = prepare_workdir(root)
    notes = wd / "notes.txt"  # large enough that its superseded read is worth a batch
    notes.write_text(notes.read_text() + "".join(
        f"Background paragraph {i}: the greeting module prints a friendly message to the user.\n"
        for i in range(160)))
    return wd


def _rows(db: Path) -> list[sqlite3.Row]:
    if not db.exists():
        return []
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    try:
        return conn.execute("SELECT * FROM requests ORDER BY id").fetchall()
    except sqlite3.Error:
        return []
    finally:
        conn.close()


def _wait_recorded(n: int) -> None:
    """The recorder is the last stage: n rows means every stage heard n responses."""
    deadline = time.monotonic() + 30
    while len(_rows(dirs().database)) < n and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(_rows(dirs().database)) >= n


def _session(wd: Path, clock_file: Path, url_of, wait=lambda: None) -> tuple[str, str]:
    """The main session, an idle gap past the TTL, the resume. Returns both session ids."""
    clock.set_offset(clock_file, 0)
    rc, res, out, err = run_claude(url_of(), wd, "Look at notes.txt and fix the TODO.")
    assert rc == 0 and res and not res["is_error"], (out[-1500:], err[-1500:])
    wait()
    clock.set_offset(clock_file, 2 * 3600)  # idle past any TTL, for the proxy and the emulator alike
    rc, res2, out, err = run_claude(url_of(), wd, "Check notes.txt again.", resume=res["session_id"])
    assert rc == 0 and res2 and not res2["is_error"], (out[-1500:], err[-1500:])
    assert res2["result"] == RESUME_TEXT
    wait()
    return res["session_id"], res2["session_id"]


def _bill(emu) -> float:
    """The emulator's bill of every API request it answered, priced with the one price table."""
    reqs = [r for r in emu.received if r.usage is not None]
    assert reqs and all(r.status == 200 for r in emu.api_requests)
    return sum(PRICES.rates(r.json().get("model", "")).cost(r.usage) for r in reqs)


@pytest.mark.claude_cli
def test_report_realized_saving_matches_the_bill_difference(tmp_path, monkeypatch):
    claude_bin()
    clock_file = tmp_path / "clock"
    monkeypatch.setenv("SCALPEL_TEST_CLOCK_FILE", str(clock_file))

    # Straight to the emulator.
    wd = _workdir(tmp_path / "direct" / "proj")
    with running_emulator(claude_code_session(wd)) as direct_emu:
        _session(wd, clock_file, lambda: direct_emu.url)
        direct = _bill(direct_emu)
        direct_n = len(direct_emu.api_requests)

    # Through the proxy as it ships (same script, same kind of working directory).
    wd = _workdir(tmp_path / "proxied" / "proj")
    with running_emulator(claude_code_session(wd)) as emu:
        rt = Runtime(Config.load(), {"anthropic_upstream": emu.url}, port=0).start()
        try:
            _session(wd, clock_file, lambda: f"http://127.0.0.1:{rt.port}",
                     wait=lambda: _wait_recorded(len(emu.api_requests)))
        finally:
            rt.stop()
        proxied = _bill(emu)
        proxied_n = len(emu.api_requests)

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert scalpel_main(["report", "--json"]) == 0
    realized = json.loads(out.getvalue())["total"]["realized"]
    difference = direct - proxied
    print(f"direct bill ${direct:.6f} ({direct_n} requests), proxied ${proxied:.6f} ({proxied_n}); "
          f"difference ${difference:.6f}; report realized ${realized['usd']:.6f} ± ${realized['error_usd']:.6f} "
          f"(sources {realized['sources']}), {100 * (realized['usd'] - difference) / difference:+.3f}%")
    assert direct_n == proxied_n  # the same session both times
    assert difference > 0, "the cuts made the proxied run cheaper"
    assert abs(realized["usd"] - difference) <= 0.02 * difference

    rows = [r for r in _rows(dirs().database) if r["realized_tokens"]]
    assert rows and all(r["realized_tier"] == "usage" for r in rows)
    assert all(r["realized_tokens_by"] in ("fit", "pooled", "own_request") for r in rows)
    for r in rows:  # the tokens are the bytes removed x the ratio the row names
        assert r["realized_bytes"] == r["body_bytes"] - r["sent_bytes"] > 0
        assert abs(r["realized_tokens"] - r["realized_bytes"] * r["tokens_per_byte"]) <= 1
        if r["realized_tokens_by"] != "own_request":
            assert r["ratio_pairs"] >= 4 and r["ratio_error_pct"] is not None
    # The emulator counts a quarter token per byte of each block: the measured ratios say so.
    assert all(0.2 < r["tokens_per_byte"] < 0.3 for r in rows)
