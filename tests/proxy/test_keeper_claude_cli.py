"""Issue 24's live done-when for the cache keeper, with the real Claude Code 2.1.332 CLI.

A session on a 5-minute cache (the emulator's scripted one), paused 15 minutes (the shared test clock,
moved in steps the keeper sees) and resumed: once straight to the emulator, once through the proxy with
``keepalive`` off, twice with it on (at the default cap, and at a cap of 10%), each against a fresh
emulator. The user's ledger (the proxied runs)
holds savings and earlier pauses of 15 minutes. Priced by Claude Code's own ``total_cost_usd`` of the
session and its resume, plus, with the keeper on, what its pings cost on the emulator's bill (Claude Code
never sees them): on costs less than directly, and no more than off."""

from __future__ import annotations

import time

import pytest

from scalpel_desktop import clock
from scalpel_desktop.accounting.prices import PriceTable
from scalpel_desktop.config import Config
from scalpel_desktop.emulator.scripts import claude_code_session
from scalpel_desktop.emulator.testing import running_emulator
from scalpel_desktop.paths import dirs
from scalpel_desktop.runtime import Runtime
from tests.proxy.conftest import wait_for
from tests.proxy.test_keeper import move_to, seed
from tests.support import claude_bin
from tests.support.claude_cli import run_claude
from tests.surgery.test_realized_claude_cli import _wait_recorded, _workdir

PAUSE_S = 15 * 60


def _claude(url, wd, prompt, **kw) -> dict:
    rc, res, out, err = run_claude(url, wd, prompt, **kw)
    assert rc == 0 and res and not res["is_error"], (out[-1500:], err[-1500:])
    return res


def _run(root, clock_file, keepalive: bool | None, **settings) -> tuple[float, int, dict]:
    """(Claude Code's cost of the session and its resume plus the pings' on the emulator's bill, pings,
    the keeper's status); ``keepalive`` None: straight to the emulator."""
    clock.set_offset(clock_file, 0)
    wd = _workdir(root / "proj")
    prices = PriceTable.load()
    with running_emulator(claude_code_session(wd)) as emu:
        rt = keeper = None
        url = emu.url
        if keepalive is not None:
            seed(banked_usd=5.0)
            rt = Runtime(Config.load(), {"anthropic_upstream": emu.url, "keepalive": keepalive, **settings},
                         port=0).start()
            assert wait_for(lambda: rt.pipeline.get("surgery") is not None)
            keeper, url = rt.pipeline.get("keeper"), f"http://127.0.0.1:{rt.port}"
        try:
            first = _claude(url, wd, "Look at notes.txt and fix the TODO.")
            if rt is not None:
                _wait_recorded(len(emu.api_requests))
            end = clock.now()
            while clock.now() < end + PAUSE_S:  # the pause, in steps the keeper sees (at most 20 s)
                due = [w.last_use + w.plan.step_s + 0.5 for w in list(keeper._waits.values()) if w.armed
                       and not w.done and w.plan is not None and w.pings < w.plan.pings] if keeper else []
                t = min([end + PAUSE_S, clock.now() + 20.0, *due])
                if keeper is not None and keeper.loop.running:
                    move_to(clock_file, keeper, t)
                else:
                    clock.set_offset(clock_file, clock.offset() + t - clock.now())
            again = _claude(url, wd, "Check notes.txt again.", resume=first["session_id"])
            if rt is not None:
                _wait_recorded(len(emu.api_requests))
        finally:
            if rt is not None:
                rt.stop()
        pings = [r for r in emu.api_requests if r.json().get("max_tokens") == 1]
        extra = sum(prices.rates(r.json()["model"]).cost(r.usage) for r in pings)
        status = keeper.status() if keeper is not None else {}
    for extra_file in ("", "-wal", "-shm"):  # the next run starts from its own ledger
        (dirs().database.parent / (dirs().database.name + extra_file)).unlink(missing_ok=True)
    return first["total_cost_usd"] + again["total_cost_usd"] + extra, len(pings), status


@pytest.mark.claude_cli
def test_a_paused_session_costs_less_kept_warm_than_directly_and_no_more_than_without(tmp_path, monkeypatch):
    claude_bin()
    clock_file = tmp_path / "clock"
    monkeypatch.setenv("SCALPEL_TEST_CLOCK_FILE", str(clock_file))
    started = time.monotonic()
    direct, _, _ = _run(tmp_path / "r1", clock_file, None)
    off, off_pings, _ = _run(tmp_path / "r2", clock_file, False)
    # the default cap (1% of what the conversation cost) cannot fund the pings this short session needs
    # (three of about $0.004 against $0.0014 of room): no ping, the cost of keepalive off
    capped, capped_pings, capped_status = _run(tmp_path / "r3", clock_file, True)
    # a user who allows 10%: three pings keep the cache, the resume reads it
    on, on_pings, status = _run(tmp_path / "r4", clock_file, True, risk_cap_pct=10.0)
    print(f"direct ${direct:.4f}, keepalive off ${off:.4f}, on at the 1% cap ${capped:.4f} ({capped_pings} pings), "
          f"on at 10% ${on:.4f} ({on_pings} pings, {status}); {time.monotonic() - started:.0f} s")
    assert off_pings == 0 and capped_pings == 0 and capped == pytest.approx(off, rel=1e-3), capped_status
    assert on_pings > 0 and status["kept"] == 1, status
    assert on < direct and on <= off + 1e-9
