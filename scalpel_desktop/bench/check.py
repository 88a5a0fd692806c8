"""Check the judge: does the simulator's unmodified arm reproduce the real bill?

A policy is priced as real + (simulated with it - simulated without), so the
simulator's bias cancels; what is left to check is that its unmodified arm
(``off``) bills each request as the provider did. It is anchored to the usage
(every request's prompt total, its read boundary) but not copied from it: the
split between cache reads, 5-minute and 1-hour writes and plain input comes
from the cache model (Claude Code's breakpoints, lookback, minimum cacheable
size, TTL). Target: within 2% of the real bill on any corpus, with nothing
fitted on a corpus. Sessions further off are listed with their error.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

TARGET_PCT = 2.0


@dataclass
class CheckRow:
    name: str
    real_cost: float
    simulated_cost: float
    error_pct: float


@dataclass
class CheckReport:
    real_cost: float
    simulated_cost: float
    error_pct: float
    within_target: bool
    rows: list[CheckRow]

    def as_dict(self) -> dict:
        return {
            "real_cost_usd": round(self.real_cost, 6),
            "simulated_cost_usd": round(self.simulated_cost, 6),
            "error_pct": round(self.error_pct, 3),
            "abs_error_pct_by_session_median": round(_median([abs(r.error_pct) for r in self.rows]), 3),
            "target_pct": TARGET_PCT,
            "within_target": self.within_target,
            "what": "the anchored simulator's unmodified arm (off) against the real bill",
            "off_target_sessions": [
                {"session": r.name, "real_cost_usd": round(r.real_cost, 6),
                 "simulated_cost_usd": round(r.simulated_cost, 6), "error_pct": round(r.error_pct, 2)}
                for r in self.rows if abs(r.error_pct) > TARGET_PCT
            ],
        }


def _pct(real: float, sim: float) -> float:
    return 100.0 * (sim - real) / real if real > 0 else 0.0


def _median(xs: list[float]) -> float:
    """The median (the mean of the two middle values for an even count; 0 for none)."""
    return statistics.median(xs) if xs else 0.0


def check_report(sessions) -> CheckReport:
    """The check over replayed sessions (``replay.SessionResult`` s)."""
    real = sum(s.real_cost for s in sessions)
    sim = sum(s.costs["off"] for s in sessions)
    rows = [CheckRow(s.name, s.real_cost, s.costs["off"], _pct(s.real_cost, s.costs["off"])) for s in sessions]
    err = _pct(real, sim)
    return CheckReport(real, sim, err, abs(err) <= TARGET_PCT, rows)
