"""Issue 23's live check: a long session with an early dead read, directly and through the proxy.

The user's ledger first holds one saving (a real Claude Code session resumed
past the TTL, cut at its cold break) and three earlier long sessions of about
58 requests, all through the proxy. Then another such long session, with no
idle gap (its large read dies at the second request, 55 small turns follow),
runs once straight to the emulator and once through the proxy as it ships
(the default policy), each against a fresh emulator at lookback 12, 20 and 28
blocks (the reading the API leaves undocumented). Claude Code's own
``total_cost_usd`` prices both runs; the emulator's bill is shown beside it.
The scenario itself is ``tests/support/warm_live.py`` (its test,
``tests/surgery/test_warm_cut_claude_cli.py``, runs a shorter one).

    python benchmarks/warm_cut_live.py            # about 30 s
    SCALPEL_WARM_LIVE_LOOKBACKS=20 SCALPEL_WARM_LIVE_REASONS=1 python benchmarks/warm_cut_live.py

Everything runs under a temporary HOME, SCALPEL_HOME, CLAUDE_CONFIG_DIR and
XDG dirs; the emulator and the proxy listen on free loopback ports.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(tempfile.mkdtemp(prefix="scalpel-warm-live-"))
for _k, _v in {"HOME": "home", "SCALPEL_HOME": "scalpel", "CLAUDE_CONFIG_DIR": "home/.claude",
               "XDG_CONFIG_HOME": "xdg/config", "XDG_DATA_HOME": "xdg/data", "XDG_STATE_HOME": "xdg/state",
               "XDG_CACHE_HOME": "xdg/cache"}.items():
    (ROOT / _v).mkdir(parents=True, exist_ok=True)
    os.environ[_k] = str(ROOT / _v)
os.environ["SCALPEL_TEST_CLOCK_FILE"] = str(ROOT / "clock")
for _k in ("ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", "SCALPEL_ANTHROPIC_UPSTREAM"):
    os.environ.pop(_k, None)
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scalpel_desktop.accounting.prices import PriceTable  # noqa: E402
from tests.support.warm_live import build_ledger, long_run, rows  # noqa: E402

LOOKBACKS = tuple(int(x) for x in os.environ.get("SCALPEL_WARM_LIVE_LOOKBACKS", "12,20,28").split(","))
TURNS = int(os.environ.get("SCALPEL_WARM_LIVE_TURNS", "55"))


def main() -> int:
    t0 = time.monotonic()
    prices = PriceTable.load()
    snapshot = build_ledger(ROOT, TURNS)
    print(f"ledger: one saving and three long sessions, {rows()} rows ({time.monotonic() - t0:.0f} s)")
    print(f"{'lookback':>8} {'direct $':>10} {'proxied $':>10} {'saving':>8} {'emulator bill d/p $':>21}  decisions")
    results = []
    for lb in LOOKBACKS:
        d = long_run(ROOT, lb, False, snapshot, prices, TURNS)
        p = long_run(ROOT, lb, True, snapshot, prices, TURNS)
        saving = 100.0 * (d.cost_usd - p.cost_usd) / d.cost_usd if d.cost_usd else 0.0
        if os.environ.get("SCALPEL_WARM_LIVE_REASONS"):
            for r in p.rows:
                print("  ", r[0], r[1], r[2], (r[3] or "")[:150], (r[4] or "")[:300])
        results.append({"lookback": lb, "direct_usd": d.cost_usd, "proxied_usd": p.cost_usd, "saving_pct": saving,
                        "emulator_direct_usd": d.bill_usd, "emulator_proxied_usd": p.bill_usd,
                        "requests": [d.requests, p.requests], "decisions": p.decisions})
        print(f"{lb:>8} {d.cost_usd:>10.4f} {p.cost_usd:>10.4f} {saving:>7.2f}% {d.bill_usd:>10.4f}/{p.bill_usd:<10.4f}  "
              f"{json.dumps(p.decisions, sort_keys=True)}")
    print(json.dumps({"results": results, "seconds": round(time.monotonic() - t0, 1)}))
    shutil.rmtree(ROOT, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
