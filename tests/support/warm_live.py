"""Issue 23's live check, shared by its test and ``benchmarks/warm_cut_live.py``.

A user's ledger first holds one saving (a real Claude Code session resumed
past the TTL, cut at its cold break) and three earlier long sessions, all
through the proxy. Then another long session with no idle gap (its large read
dies at the second request, small turns follow) runs once straight to the
emulator and once through the proxy as it ships, against a fresh emulator at
a given lookback (the reading the API leaves undocumented). Claude Code's own
``total_cost_usd`` prices both runs; the emulator's bill is kept beside it.

The caller sets HOME, SCALPEL_HOME, CLAUDE_CONFIG_DIR, the XDG dirs and
``SCALPEL_TEST_CLOCK_FILE`` to temporary places first.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path

from scalpel_desktop import clock
from scalpel_desktop.accounting.prices import PriceTable
from scalpel_desktop.config import Config
from scalpel_desktop.emulator.scripts import claude_code_session, long_session, prepare_long_workdir, prepare_workdir
from scalpel_desktop.emulator.testing import running_emulator
from scalpel_desktop.paths import dirs
from scalpel_desktop.runtime import Runtime
from tests.support.claude_cli import run_claude

PROMPT = "Review the design notes."


@dataclass
class Run:
    cost_usd: float  # Claude Code's own total_cost_usd
    bill_usd: float  # the emulator's bill of what it received
    requests: int
    decisions: dict = field(default_factory=dict)  # the proxy's decisions by label (proxied runs)
    rows: list = field(default_factory=list)  # (id, model, decision, reason, figures) of the proxied run


def claude(url: str, wd: Path, prompt: str, **kw) -> dict:
    rc, res, out, err = run_claude(url, wd, prompt, timeout=600, **kw)
    assert rc == 0 and res and not res.get("is_error"), (rc, out[-800:], err[-800:])
    return res


def rows() -> int:
    db = dirs().database
    if not db.exists():
        return 0
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return conn.execute("SELECT COUNT(*) FROM requests").fetchone()[0]
    except sqlite3.Error:
        return 0
    finally:
        conn.close()


def recorded(n: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while rows() < n and time.monotonic() < deadline:
        time.sleep(0.05)


def start_proxy(upstream: str) -> Runtime:
    """A proxy with surgery on: on a busy machine the features may come on a moment after the port
    listens (``pipeline/late_features.py``), and this scenario is about what surgery does."""
    rt = Runtime(Config.load(), {"anthropic_upstream": upstream}, port=0).start()
    deadline = time.monotonic() + 30
    while not rt.status().get("surgery_active") and time.monotonic() < deadline:
        time.sleep(0.05)
    return rt


def bill(emu, prices: PriceTable) -> float:
    return sum(prices.rates(r.json().get("model", "")).cost(r.usage) for r in emu.received if r.usage is not None)


def build_ledger(root: Path, turns: int = 55) -> Path:
    """The saving and the three long sessions, through the proxy (lookback 20); a copy of the
    ledger folder afterwards, for every proxied run to start from."""
    clock.set_offset(os.environ["SCALPEL_TEST_CLOCK_FILE"], 0)
    wd = prepare_workdir(root / "work" / "saving")
    notes = wd / "notes.txt"  # large enough that its superseded read, cut at the resume's cold break, saves
    notes.write_text(notes.read_text() + "".join(
        f"Background paragraph {i}: the greeting module prints a friendly message to the user.\n"
        for i in range(160)))
    with running_emulator(claude_code_session(wd)) as emu:
        rt = start_proxy(emu.url)
        try:
            url = f"http://127.0.0.1:{rt.port}"
            res = claude(url, wd, "Look at notes.txt and fix the TODO.")
            recorded(len(emu.api_requests))
            clock.set_offset(os.environ["SCALPEL_TEST_CLOCK_FILE"], 2 * 3600)  # idle past any TTL
            claude(url, wd, "Check notes.txt again.", resume=res["session_id"])
            recorded(len(emu.api_requests))
            for i in range(3):
                wd = prepare_long_workdir(root / "work" / f"long{i}")
                emu.set_script(long_session(wd, turns=turns))
                claude(url, wd, PROMPT)
                recorded(len(emu.api_requests))
        finally:
            rt.stop()
    snapshot = root / "ledger-snapshot"
    shutil.copytree(dirs().data, snapshot)
    return snapshot


def snapshot_budget(snapshot: Path) -> tuple[float, float]:
    """(saved, staked) of the risk budget in a ledger snapshot (``build_ledger``): what a proxy
    starting from it reads at start (``surgery/remaining.own_budget``)."""
    from scalpel_desktop.store.budget_ledger import risk_budget

    conn = sqlite3.connect(f"file:{snapshot / dirs().database.name}?mode=ro", uri=True)
    try:
        return risk_budget(conn)
    finally:
        conn.close()


def snapshot_rows(snapshot: Path) -> list:
    """(id, decision, reason, banked_usd) of the saving session's rows in a snapshot (a failure's story)."""
    conn = sqlite3.connect(f"file:{snapshot / dirs().database.name}?mode=ro", uri=True)
    try:
        return conn.execute("SELECT id, decision, reason, banked_usd FROM requests ORDER BY id LIMIT 40").fetchall()
    finally:
        conn.close()


def long_run(root: Path, lookback: int, proxied: bool, snapshot: Path, prices: PriceTable,
             turns: int = 55) -> Run:
    """The fourth long session at ``lookback``, straight to a fresh emulator or through a proxy that
    starts from the ``snapshot`` ledger."""
    wd = prepare_long_workdir(root / "work" / f"L{lookback:02d}{'p' if proxied else 'd'}")
    with running_emulator(long_session(wd, turns=turns), lookback=lookback) as emu:
        if not proxied:
            res = claude(emu.url, wd, PROMPT)
            return Run(res["total_cost_usd"], bill(emu, prices), len(emu.api_requests))
        data = dirs().data
        shutil.rmtree(data, ignore_errors=True)
        shutil.copytree(snapshot, data)
        before = rows()
        rt = start_proxy(emu.url)
        try:
            res = claude(f"http://127.0.0.1:{rt.port}", wd, PROMPT)
            recorded(before + len(emu.api_requests))
        finally:
            rt.stop()
        conn = sqlite3.connect(dirs().database)
        try:
            decisions = dict(conn.execute("SELECT decision, COUNT(*) FROM requests WHERE id > ? GROUP BY decision",
                                          (before,)).fetchall())
            detail = conn.execute("SELECT id, model, decision, reason, figures FROM requests WHERE id > ?",
                                  (before,)).fetchall()
        finally:
            conn.close()
        return Run(res["total_cost_usd"], bill(emu, prices), len(emu.api_requests), decisions, detail)
