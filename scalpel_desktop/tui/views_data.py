"""The dashboard's everyday views as plain dataclasses: usage and cost, and the context breakdown.

Like ``tui/data.py``: figures come from the ledger reader's named queries
(``ledger_queries.usage_rows``, ``session_context``), priced and grouped by
``accounting/usage_views.py``; no SQL here, no Textual.

The context breakdown, like Claude Code's ``/context``, for a session's latest
main-agent request:

* the prompt total is measured (input + cache writes + cache reads of its
  usage counts); without usage, the proxy's estimate of the body sent;
* the split into system, tools, MCP tools, messages and tool results is an
  *estimate*: the identify stage sized each region of the body received
  (``accounting/context_regions.py``), the tokens scalpel's stubs removed are
  taken off the tool results, and the regions are scaled so they sum to the
  measured total (largest remainder, so the shown figures add up exactly);
* dead weight still carried is the dead tool output the surgery found but did
  not cut (an estimate, part of the tool results, scaled the same way);
* free space is the model's context window less the measured total.

The cache misses (``store/misses.py`` reads and groups them) over today, the
last 7 and the last 30 local days, as ``scalpel misses`` counts them: by
cause, and by session with its main cause (the one that cost it most); each
period beside its bill (the usage counts of its requests at the price table,
as the Usage tab prices them), so a miss cost reads as a share of it.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from typing import Any

from scalpel_desktop.accounting import usage_views as uv
from scalpel_desktop.accounting.windows import context_window
from scalpel_desktop.store import ledger_queries as q
from scalpel_desktop.store import ledger_views as v
from scalpel_desktop.store import misses as m

REGION_LABELS = (("system", "System prompt"), ("tools", "Tools"), ("mcp_tools", "MCP tools"),
                 ("messages", "Messages"), ("tool_results", "Tool results"))
DAYS = 31
MONTHS_S = 366 * 86400.0
BLOCKS_SHOWN = 8


@dataclass(frozen=True)
class ContextBreakdown:
    session: str
    model: str
    window: int
    total: int | None  # measured prompt tokens (or the estimate when ``measured`` is False)
    measured: bool
    regions: tuple[tuple[str, str, int], ...] = ()  # (key, label, tokens), scaled to ``total``
    dead_left: int | None = None  # estimated, scaled; part of the tool results
    removed: int = 0  # estimated tokens scalpel's stubs took out of this request
    cut_tokens: int = 0  # every cut of the session (surgery log)
    cuts: int = 0

    @property
    def free(self) -> int | None:
        return None if self.total is None else max(0, self.window - self.total)


def scale_to(parts: dict[str, int], total: int) -> dict[str, int]:
    """``parts`` scaled to sum exactly to ``total`` (largest remainder)."""
    est = sum(max(0, v) for v in parts.values())
    if est <= 0 or total <= 0:
        return {k: 0 for k in parts}
    raw = {k: max(0, v) * total / est for k, v in parts.items()}
    out = {k: int(v) for k, v in raw.items()}
    short = total - sum(out.values())
    for k in sorted(raw, key=lambda k: (-(raw[k] - out[k]), k))[:short]:
        out[k] += 1
    return out


def context_breakdown(conn: sqlite3.Connection, session: str, now: float) -> ContextBreakdown | None:
    f = v.session_context(conn, session, now)
    if f is None:
        return None
    window = context_window(f.model)
    total = f.prompt if f.prompt is not None else f.estimate
    regions: tuple = ()
    dead = None
    if f.regions and total:
        est = {k: int(f.regions.get(k, 0)) for k, _ in REGION_LABELS}
        est["tool_results"] = max(0, est["tool_results"] - f.removed)  # what the stubs took out was not sent
        scaled = scale_to(est, int(total))
        regions = tuple((k, label, scaled[k]) for k, label in REGION_LABELS)
        if f.dead_left is not None:
            factor = int(total) / max(1, sum(est.values()))
            dead = min(scaled["tool_results"], int(round(f.dead_left * factor)))
    elif f.dead_left is not None:
        dead = f.dead_left
    return ContextBreakdown(session, f.model, window, total, f.prompt is not None, regions, dead, f.removed,
                            f.cut_tokens, f.cuts)


@dataclass(frozen=True)
class UsageData:
    now: float
    days: tuple[uv.Tally, ...] = ()  # the last DAYS local days with usage, oldest first
    months: tuple[uv.Tally, ...] = ()
    blocks: tuple[uv.Block, ...] = ()  # the last BLOCKS_SHOWN 5-hour blocks, oldest first
    prices_as_of: str = ""
    missing: str = ""

    @property
    def active_block(self) -> uv.Block | None:
        return self.blocks[-1] if self.blocks and self.blocks[-1].active else None


def load_usage(conn: sqlite3.Connection, now: float, prices: Any = None) -> UsageData:
    from scalpel_desktop import clock
    from scalpel_desktop.accounting.prices import PriceTable

    if not q.has_requests(conn):
        return UsageData(now, missing="the ledger has no requests table yet")
    prices = prices or PriceTable.load()
    rows = v.usage_rows(conn, now - MONTHS_S, now)
    day_start = clock.day_starts(now, DAYS)[0]
    recent = [r for r in rows if r[0] >= day_start]
    blocks = uv.blocks([r for r in rows if r[0] >= now - 3 * 86400], prices, now)
    return UsageData(now, tuple(uv.daily(recent, prices)), tuple(uv.monthly(rows, prices)),
                     tuple(blocks[-BLOCKS_SHOWN:]), prices.as_of)


def session_costs(conn: sqlite3.Connection, sessions: list[str], now: float, prices: Any) -> dict[str, float]:
    """session -> what its requests with usage counts cost (all of them, up to ``now``)."""
    return {s: t.cost_usd for s, t in uv.by_session(v.usage_rows(conn, None, now, sessions), prices).items()}


@dataclass(frozen=True)
class Names:
    """What the sessions tab calls each session: project (directory name), its path, and a title."""

    project: dict[str, str] = field(default_factory=dict)  # session -> ~/path
    title: dict[str, str] = field(default_factory=dict)


def project_name(path: str) -> str:
    """The last component of a project path (``~/work/scalpel`` -> ``scalpel``)."""
    p = path.rstrip("/")
    return p.rsplit("/", 1)[-1] or p


# -- cache misses ----------------------------------------------------------------------

MISS_PERIODS = (("Today", 1), ("7 days", 7), ("30 days", 30))
MISS_DEFAULT_PERIOD = 1  # 7 days, like ``scalpel misses``


@dataclass(frozen=True)
class MissPeriod:
    label: str
    since: float  # local midnight the period starts at
    count: int = 0
    tokens_rewritten: int = 0
    cost_usd: float = 0.0
    bill_usd: float = 0.0  # what the period's requests with usage counts cost
    causes: tuple[m.CauseFigures, ...] = ()  # CAUSES order
    sessions: tuple[m.SessionMisses, ...] = ()  # the costliest first

    @property
    def bill_share(self) -> float | None:
        """The misses' cost as a share of the bill (None without a bill)."""
        return self.cost_usd / self.bill_usd if self.bill_usd > 0 else None

    def share(self, cost_usd: float) -> float | None:
        """``cost_usd`` as a share of the period's miss cost."""
        return cost_usd / self.cost_usd if self.cost_usd > 0 else None


@dataclass(frozen=True)
class MissesData:
    now: float
    periods: tuple[MissPeriod, ...] = ()  # MISS_PERIODS
    names: Names = field(default_factory=Names)
    missing: str = ""


def load_misses(conn: sqlite3.Connection, now: float, prices: Any = None,
                transcripts: list | None = None) -> MissesData:
    """Every period's misses; ``transcripts``: where Claude Code's transcripts are (session titles)."""
    from scalpel_desktop import clock
    from scalpel_desktop.accounting.prices import PriceTable
    from scalpel_desktop.tui import titles

    if not q.has_requests(conn):
        return MissesData(now, missing="the ledger has no requests table yet")
    prices = prices or PriceTable.load()
    starts = clock.day_starts(now, MISS_PERIODS[-1][1])
    rows = [x for x in m.misses_since(conn, starts[0]) if x.ts <= now]
    usage = v.usage_rows(conn, starts[0], now)
    periods = []
    for label, days in MISS_PERIODS:
        since = starts[-days]
        these = [x for x in rows if x.ts >= since]
        bill = sum(t.cost_usd for t in uv.by_session([r for r in usage if r[0] >= since], prices).values())
        periods.append(MissPeriod(label, since, len(these), sum(x.tokens_rewritten for x in these),
                                  sum(x.cost_usd for x in these), bill, tuple(m.by_cause(these)),
                                  tuple(m.by_session(these))))
    sessions = sorted({x.session for x in rows})
    names = Names(v.session_projects(conn, sessions), titles.titles(sessions, transcripts))
    return MissesData(now, tuple(periods), names)
