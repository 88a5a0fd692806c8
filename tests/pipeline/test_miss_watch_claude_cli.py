"""Issue 24's done-when, live: a real Claude Code 2.1.332 session resumed past the TTL, then the
emulator drops its whole cache before a later request. ``scalpel misses --json`` names the first
miss ``ttl-expired`` and the second ``unexplained``, and prices the eviction within 5% of what it
cost on the emulator's own bill (the same request billed on a copy of the cache taken just before)."""

from __future__ import annotations

import copy
import io
import json
import time
from contextlib import redirect_stdout

import pytest

from scalpel_desktop import clock
from scalpel_desktop.accounting.prefix_blocks import request_blocks
from scalpel_desktop.accounting.prices import PriceTable
from scalpel_desktop.cli import main as scalpel_main
from scalpel_desktop.config import Config
from scalpel_desktop.emulator.scripts import claude_code_session
from scalpel_desktop.emulator.testing import running_emulator
from scalpel_desktop.paths import dirs
from scalpel_desktop.runtime import Runtime
from tests.support import claude_bin
from tests.support.claude_cli import run_claude
from tests.surgery.test_realized_claude_cli import _rows, _wait_recorded, _workdir


def _misses() -> dict:
    out = io.StringIO()
    with redirect_stdout(out):
        assert scalpel_main(["misses", "--json", "--since", "2000-01-01"]) == 0
    return json.loads(out.getvalue())


@pytest.mark.claude_cli
def test_a_ttl_expiry_then_an_eviction_are_named_and_priced(tmp_path, monkeypatch):
    claude_bin()
    clock_file = tmp_path / "clock"
    clock.set_offset(clock_file, 0)
    monkeypatch.setenv("SCALPEL_TEST_CLOCK_FILE", str(clock_file))
    prices = PriceTable.load()
    wd = _workdir(tmp_path / "proj")
    with running_emulator(claude_code_session(wd)) as emu:
        rt = Runtime(Config.load(), {"anthropic_upstream": emu.url}, port=0).start()
        try:
            url = f"http://127.0.0.1:{rt.port}"
            rc, res, out, err = run_claude(url, wd, "Look at notes.txt and fix the TODO.")
            assert rc == 0 and res and not res["is_error"], (out[-1500:], err[-1500:])
            _wait_recorded(len(emu.api_requests))
            last = max(r["answered_at"] or 0 for r in _rows(dirs().database))
            clock.set_offset(clock_file, last + 9 * 60 - time.time())  # 9 minutes later: past the 5-minute TTL
            rc, _, out, err = run_claude(url, wd, "Check notes.txt again.", resume=res["session_id"])
            assert rc == 0, (out[-1500:], err[-1500:])
            _wait_recorded(len(emu.api_requests))
            assert [m["cause"] for m in _misses()["misses"]] == ["ttl-expired"]

            before = copy.deepcopy(emu.cache)  # the cache as it stood, for the emulator's own counterfactual
            n = len(emu.api_requests)
            emu.fault("evict")
            rc, _, out, err = run_claude(url, wd, "Check notes.txt once more.", resume=res["session_id"])
            assert rc == 0, (out[-1500:], err[-1500:])
            _wait_recorded(len(emu.api_requests))
        finally:
            rt.stop()
    evicted = next(r for r in emu.api_requests[n:] if r.fault == "evict")
    body = evicted.json()
    from scalpel_desktop.accounting.cache_model import min_cacheable_for

    kept = before.bill(("anthropic", body["model"]), request_blocks(body), emu.now(), dry_run=True,
                       min_cacheable=min_cacheable_for(body["model"]))
    rates = prices.rates(body["model"])
    extra = rates.cost(evicted.usage) - rates.cost(kept)  # what the eviction cost on the emulator's bill
    got = _misses()
    assert [m["cause"] for m in got["misses"]] == ["ttl-expired", "unexplained"], got["misses"]
    miss = got["misses"][1]
    assert extra > 0 and miss["cost_usd"] == pytest.approx(extra, rel=0.05), (miss, extra)
    assert miss["tokens_rewritten"] > 0 and miss["read_stopped_at"] == evicted.usage.cache_read
    assert got["total"]["count"] == 2
    assert set(got["total"]["by_cause"]) == {"ttl-expired", "unexplained"}
    assert got["total"]["cost_usd"] == pytest.approx(sum(m["cost_usd"] for m in got["misses"]), abs=1e-5)
    print(f"misses: {got['misses']}; the eviction cost the emulator ${extra:.6f}")


@pytest.mark.claude_cli
def test_many_parallel_calls_are_a_lookback_miss(tmp_path):
    """15 parallel Reads in one turn: the request after them carries Claude Code's one message
    marker 30 blocks past the entry the previous request wrote, beyond the 20-block lookback, so
    the emulator reads only the system and tools. Named ``lookback``, not ``unexplained``, and
    priced from the emulator's own usage."""
    from scalpel_desktop.accounting.cache_model import min_cacheable_for
    from scalpel_desktop.emulator.script import parallel, say
    from tests.support.claude_breaks import Live

    claude_bin()
    with Live(tmp_path) as live:
        files = []
        for i in range(15):
            files.append(live.workdir / f"f{i}.txt")
            files[-1].write_text(("x" * 60 + "\n") * 40)
        live.script.tracks["many"] = [parallel(*[("Read", {"file_path": str(f)}) for f in files]), say("many done")]
        live.run("Read a.txt please.")
        live.run("SCRIPT:many read them all", continue_=True)
        live.settle()
        main = live.main()
        got = _misses()["misses"]
    assert [x["cause"] for x in got] == ["lookback"], got
    miss, (before, after) = got[0], [r.usage for r in main[-2:]]
    # The distance, counted on the emulator's own blocks (accounting/prefix_blocks.py) of the two bodies.
    was = max(i for i, b in enumerate(request_blocks(main[-2].json())) if b.breakpoint)
    now = min(i for i, b in enumerate(request_blocks(main[-1].json())) if b.breakpoint and i > was)
    assert miss["detail"]["blocks_past"] == now - was >= 30 and miss["detail"]["lookback"] == 20, (miss, was, now)
    assert miss["read_stopped_at"] == after.cache_read < before.cache_read
    want = min(before.cache_read + before.cache_write - after.cache_read, after.cache_write)
    assert miss["tokens_rewritten"] == want > min_cacheable_for(miss["model"])
