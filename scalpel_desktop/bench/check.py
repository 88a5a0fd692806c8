"""Check the judge: does the simulation reproduce the real bill?

Each unmodified session is simulated from its content, its timestamps and its
FIRST request's usage only (``SequenceSimulator(mode="check")``), and the
simulated cost is compared with what the transcript's usage counts say was
billed. Target: within 5% over the corpus. Where a session is further off,
the report says why, from evidence the simulation was not allowed to use:

* ``client breaks``: requests whose real cache read stopped short of what an
  unchanged prefix would read (the client re-wrote part of its prompt, or the
  provider dropped the entry): content cannot show them;
* ``hidden growth``: the last real prompt is larger than the content explains
  (system reminders, attachments, teammate messages the transcript omits);
* ``1h TTL`` sequences priced from a first request that wrote nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

TARGET_PCT = 5.0


@dataclass
class CheckRow:
    name: str
    real_cost: float
    simulated_cost: float
    error_pct: float
    why: str


@dataclass
class CheckReport:
    real_cost: float
    simulated_cost: float
    error_pct: float
    within_target: bool
    rows: list[CheckRow]
    breaks: int  # client breaks seen in the real usage (not used by the check)

    def as_dict(self) -> dict:
        return {
            "real_cost": round(self.real_cost, 6),
            "simulated_cost": round(self.simulated_cost, 6),
            "error_pct": round(self.error_pct, 3),
            "target_pct": TARGET_PCT,
            "within_target": self.within_target,
            "client_breaks_in_real_usage": self.breaks,
            "prefix": "system prompt + tools inferred from each sequence's first request usage",
            "off_target_sessions": [
                {"session": r.name, "real_cost": round(r.real_cost, 6), "simulated_cost": round(r.simulated_cost, 6),
                 "error_pct": round(r.error_pct, 2), "why": r.why}
                for r in self.rows if abs(r.error_pct) > TARGET_PCT
            ],
        }


def _pct(real: float, sim: float) -> float:
    return 100.0 * (sim - real) / real if real > 0 else 0.0


def explain(s) -> str:
    reasons = []
    if s.breaks:
        reasons.append(f"{s.breaks} client cache break(s) in the real usage")
    if s.last_real_prompt and s.last_check_prompt:
        hidden = s.last_real_prompt - s.last_check_prompt
        if abs(hidden) > 0.1 * s.last_real_prompt:
            word = "more" if hidden > 0 else "less"
            reasons.append(f"final prompt {abs(hidden):,} tokens {word} than the content explains")
    if not reasons:
        reasons.append("estimate error spread over requests")
    return "; ".join(reasons)


def check_report(sessions) -> CheckReport:
    """The check over replayed sessions (``replay.SessionResult`` s)."""
    real = sum(s.real_cost for s in sessions)
    sim = sum(s.check_cost for s in sessions)
    rows = [CheckRow(s.name, s.real_cost, s.check_cost, _pct(s.real_cost, s.check_cost), explain(s)) for s in sessions]
    err = _pct(real, sim)
    return CheckReport(real, sim, err, abs(err) <= TARGET_PCT, rows, sum(s.breaks for s in sessions))
