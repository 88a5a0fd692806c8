"""Percentiles and the markdown of the results.

Added latency is paired per round: a path's call minus the direct call of the
same round, the same body. ``vs bare`` pairs scalpel with the bare forward the
same way (what scalpel adds over a forward that does nothing: the issue's
targets are stated against it).
"""

from __future__ import annotations

import statistics

HEADER = ["| upstream | mode | body | messages | path | p50 added (ms) | p95 added (ms) | p50 vs bare (ms) "
          "| CPU to answer (ms) | CPU in all (ms) | rounds |",
          "|---|---|---|---:|---|---:|---:|---:|---:|---:|---:|"]


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def paired(a: list[float], b: list[float]) -> list[float]:
    """ms of a minus b, round by round."""
    return [(x - y) * 1000 for x, y in zip(a, b)]


def table_rows(upstream: str, mode: str, label: str, nmsgs: int, totals: dict, cpu: dict) -> list[str]:
    direct = totals["direct"]
    ans, every = cpu["answer"], cpu["all"]
    rows = [(f"| {upstream} | {mode} | {label} | {nmsgs:,} | direct | {statistics.median(direct) * 1000:.1f} (total) "
             f"| {pct(direct, 0.95) * 1000:.1f} (total) | | {statistics.mean(ans['direct']):.1f} "
             f"| {statistics.mean(every['direct']):.1f} | {len(direct)} |")]
    for name in ("bare", "scalpel"):
        added = paired(totals[name], direct)
        vs = f"{statistics.median(paired(totals[name], totals['bare'])):+.1f}" if name == "scalpel" else ""
        rows.append(f"| {upstream} | {mode} | {label} | {nmsgs:,} | {name} | {statistics.median(added):+.1f} "
                    f"| {pct(added, 0.95):+.1f} | {vs} | {statistics.mean(ans[name]):.1f} "
                    f"| {statistics.mean(every[name]):.1f} | {len(added)} |")
    return rows


def size_label(size: int) -> str:
    return f"{size / 1000:g} KB" if size < 1_000_000 else f"{size / 1_000_000:g} MB"
