"""Everything the dashboard reads from the ledger, as plain dataclasses.

Every figure comes from the ledger reader's named queries
(``store/ledger_queries.py``): no SQL here, and none in the widgets. Every
function takes a read-only connection and the current time, so the app runs
them in thread workers and tests call them with a frozen clock. Nothing here
imports Textual or talks to the proxy.

Definitions the screens rely on (docs/dashboard.md repeats them):

* a session is *listed* when it sent a request in the last 24 hours, and
  *active* when its last request is less than 5 minutes old (the default
  cache TTL);
* *context now* is the prompt of the session's latest main-agent request as the
  provider counted it (input + cache writes + cache reads); without usage
  counts, the proxy's estimate of the body sent, marked ``estimate``;
* *cache share* is cache reads / prompt tokens over the session's last 10
  requests that carried usage counts (sub-agents included);
* *turns* are the main agent's requests (sub-agent requests counted apart);
* savings windows are local calendar days (``clock.day_starts``): today, the
  last 7 days (today included) and the last 30 days. Realized figures come
  from the ledger's ``realized_*`` columns only; projected estimates are kept
  apart. "Saved today" on the sessions tab is ``ledger_queries.today_savings``,
  the same query as the tray's, the statusline's and ``scalpel status``'s.
* a session's *misses* are its cache misses (``store/misses.py``) and what
  they cost, over all its requests, like its cost.

The tool inventory is read through the tools package's own readers
(``tui/inventory.py``), which hold that SQL.
"""

from __future__ import annotations

import os
import re
import sqlite3
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from scalpel_desktop import clock
from scalpel_desktop.accounting.windows import context_window
from scalpel_desktop.store import ledger_queries as q
from scalpel_desktop.store import ledger_reports as reports
from scalpel_desktop.store import ledger_views as v
from scalpel_desktop.store.ledger_queries import CONVERSATION_ENDPOINTS, tables  # noqa: F401 - re-exported
from scalpel_desktop.store.misses import miss_cost_by_session

LISTED_S = 24 * 3600.0
ACTIVE_S = 300.0
RECENT_USAGE = 10
MAX_SESSIONS = 50
MAX_LOG_ROWS = 200
_HEX64 = re.compile(r"[0-9a-f]{64}")


# -- the connection ----------------------------------------------------------------


def open_ledger(path: Path | str | None = None) -> sqlite3.Connection | None:
    """A read-only connection to the ledger, or None when no ledger file exists yet."""
    return q.open_readonly(path)


@dataclass(frozen=True)
class LedgerVersion:
    """Changes whenever a row is added to a table the dashboard shows."""
    requests: int = 0
    cuts: tuple = ()
    tools: tuple = ()


def ledger_version(conn: sqlite3.Connection) -> LedgerVersion:
    from scalpel_desktop.tools.store import ToolStore

    requests, cuts = q.ledger_version(conn)
    return LedgerVersion(requests, cuts, ToolStore(conn).version())


# -- live sessions -----------------------------------------------------------------


@dataclass(frozen=True)
class SessionRow:
    session: str
    model: str
    context_tokens: int | None  # prompt tokens of the latest main-agent request
    context_source: str  # "usage" | "estimate" | ""
    window: int  # the model's context window, tokens
    cache_share: float | None  # cache reads / prompt tokens, last RECENT_USAGE requests with usage
    cache_requests: int  # how many requests that share rests on
    turns: int  # main-agent requests
    subagent_requests: int
    last_ts: float
    last_decision: str
    last_reason: str
    realized_tokens: int
    realized_usd: float
    active: bool
    project: str = ""  # the working directory Claude Code stated (~/...), "" when unknown
    title: str = ""  # Claude Code's own title from the transcript on disk, "" when none
    cost_usd: float | None = None  # what the session's requests with usage counts cost
    misses: int = 0  # its cache misses (store/misses.py) and what they cost
    miss_usd: float = 0.0

    @property
    def name(self) -> str:
        """The project's directory name (or "?" when the ledger has no project for it)."""
        from scalpel_desktop.tui.views_data import project_name

        return project_name(self.project) if self.project else "?"

    @property
    def share(self) -> float | None:
        """Context as a share of the model's window."""
        if self.context_tokens is None or not self.window:
            return None
        return self.context_tokens / self.window


@dataclass(frozen=True)
class SessionsData:
    now: float
    rows: list[SessionRow] = field(default_factory=list)
    requests_today: int = 0  # these four: ledger_queries.today_savings (since local midnight)
    saved_tokens_today: int = 0
    saved_usd_today: float = 0.0
    side_calls_today: int = 0  # count_tokens and other calls that are not requests, apart
    missing: str = ""  # why there is nothing to show (no ledger yet, ...)
    contexts: dict = field(default_factory=dict)  # session -> views_data.ContextBreakdown

    @property
    def active(self) -> int:
        return sum(r.active for r in self.rows)


def load_sessions(conn: sqlite3.Connection, now: float, prices: Any = None,
                  transcripts: list[Path] | None = None) -> SessionsData:
    """``transcripts``: where Claude Code's transcripts are (titles; default: its projects dirs)."""
    from scalpel_desktop.accounting.prices import PriceTable
    from scalpel_desktop.tui import titles, views_data

    if not q.has_requests(conn):
        return SessionsData(now, missing="the ledger has no requests table yet")
    today = q.today_savings(conn, now)
    listed = q.recent_sessions(conn, now - LISTED_S, now, MAX_SESSIONS)
    projects = v.session_projects(conn, listed)
    named = titles.titles(listed, transcripts)
    costs = views_data.session_costs(conn, listed, now, prices or PriceTable.load())
    missed = miss_cost_by_session(conn, sessions=listed, until=now)
    rows = [_session_row(f, now, projects.get(f.session, ""), named.get(f.session, ""), costs.get(f.session),
                         missed.get(f.session, (0, 0.0)))
            for f in (q.session_figures(conn, s, now, RECENT_USAGE) for s in listed) if f]
    contexts = {r.session: views_data.context_breakdown(conn, r.session, now) for r in rows}
    return SessionsData(now, rows, today.requests, today.tokens, today.usd, side_calls_today=today.side_calls,
                        contexts={k: v for k, v in contexts.items() if v is not None})


def _session_row(f: q.SessionFigures, now: float, project: str = "", title: str = "",
                 cost: float | None = None, missed: tuple[int, float] = (0, 0.0)) -> SessionRow:
    return SessionRow(
        session=f.session, model=f.model, context_tokens=f.context_tokens, context_source=f.context_source,
        window=_window(f.model, f.context_tokens), cache_share=f.cache_share, cache_requests=f.cache_requests,
        turns=f.turns, subagent_requests=f.subagent_requests, last_ts=f.last_ts,
        last_decision=f.last_decision, last_reason=f.last_reason, realized_tokens=f.realized_tokens,
        realized_usd=f.realized_usd, active=now - f.last_ts < ACTIVE_S, project=project, title=title,
        cost_usd=cost, misses=missed[0], miss_usd=missed[1],
    )


def _window(model: str | None, context: int | None) -> int:
    """The model's window; a prompt larger than the normal window proves the 1M option is on."""
    plain = context_window(model)
    return context_window(model, one_m=bool(context and context > plain))


# -- savings over time ---------------------------------------------------------------


@dataclass(frozen=True)
class Period:
    label: str
    since: float
    days: int
    requests: int = 0
    changed_requests: int = 0
    realized_tokens: int = 0
    realized_usd: float = 0.0
    projected_tokens: int = 0
    projected_usd: float = 0.0
    cost_usd: float = 0.0
    prompt_tokens: int = 0
    cache_read: int = 0

    @property
    def cache_share(self) -> float | None:
        return self.cache_read / self.prompt_tokens if self.prompt_tokens else None


@dataclass(frozen=True)
class DayPoint:
    day: str  # YYYY-MM-DD, local
    start: float
    realized_tokens: int = 0
    realized_usd: float = 0.0
    requests: int = 0


@dataclass(frozen=True)
class SavingsData:
    now: float
    periods: tuple[Period, ...] = ()  # today, 7 days, 30 days
    days: tuple[DayPoint, ...] = ()  # the last 30 local days, oldest first, zero-filled
    prices_as_of: str = ""
    projected_weight: str = ""
    assumed_prices: dict[str, str] = field(default_factory=dict)
    missing: str = ""
    # the user's risk budget (store/budget_ledger.budget_summary: the last 30 days' bets); None: unread
    budget: dict[str, Any] | None = None


PERIODS = (("Today", 1), ("7 days", 7), ("30 days", 30))


def load_savings(conn: sqlite3.Connection, now: float, prices: Any = None) -> SavingsData:
    from scalpel_desktop.accounting.prices import PriceTable
    from scalpel_desktop.accounting.report import build_report

    starts = clock.day_starts(now, 30)
    if not q.has_requests(conn):
        return SavingsData(now, missing="the ledger has no requests table yet")
    prices = prices or PriceTable.load()
    rep = build_report(conn, since=starts[0], until=now + 1e-6, by="day", prices=prices)
    groups = {g["key"]: g for g in rep["groups"]}
    points = []
    for start in starts:
        key = datetime.fromtimestamp(start).strftime("%Y-%m-%d")
        g = groups.get(key)
        points.append(DayPoint(key, start, int(g["realized"]["tokens"]) if g else 0,
                               float(g["realized"]["usd"]) if g else 0.0, int(g["requests"]) if g else 0))
    periods = []
    for label, n in PERIODS:
        since = starts[-n]
        chosen = [groups[p.day] for p in points[-n:] if p.day in groups]
        periods.append(Period(
            label, since, n,
            requests=sum(g["requests"] for g in chosen),
            changed_requests=sum(g["projected"]["changed_requests"] for g in chosen),
            realized_tokens=sum(g["realized"]["tokens"] for g in chosen),
            realized_usd=sum(g["realized"]["usd"] for g in chosen),
            projected_tokens=sum(g["projected"]["tokens"] for g in chosen),
            projected_usd=sum(g["projected"]["usd"] for g in chosen),
            cost_usd=sum(g["cost_usd"] for g in chosen),
            prompt_tokens=sum(g["prompt_tokens"] for g in chosen),
            cache_read=sum(g["tokens"]["cache_read"] for g in chosen),
        ))
    return SavingsData(now, tuple(periods), tuple(points), rep["prices"]["as_of"], rep["projected_weight"],
                       dict(rep["assumed_prices"]), budget=_budget(conn, starts[0]))


def _budget(conn: sqlite3.Connection, since: float) -> dict[str, Any] | None:
    from scalpel_desktop.store.budget_ledger import budget_summary

    try:
        return budget_summary(conn, since=since)
    except sqlite3.Error:  # an older ledger without the budget's columns: nothing to say
        return None


# -- decisions log -------------------------------------------------------------------


@dataclass(frozen=True)
class DecisionRow:
    id: int
    ts: float
    session: str
    agent: str
    model: str
    decision: str
    reason: str
    tokens_removed: int
    realized_tokens: int | None
    realized_usd: float | None
    status: int | None


@dataclass(frozen=True)
class CutRow:
    tool_use_id: str
    created_at: float
    session: str
    agent: str
    tool: str  # the tool whose result was cut ("" when the inventory did not record the call)
    kind: str  # why: superseded_read | duplicate | failed | dead_snapshot | stale_large
    tokens: int
    sha256: str
    spill_path: str  # absolute path of the spill file
    spill_bytes: int | None  # None when the spill file is gone (gc'd, or another machine)


@dataclass(frozen=True)
class DecisionsData:
    now: float
    decisions: list[DecisionRow] = field(default_factory=list)
    cuts: list[CutRow] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)  # decision -> requests, all time
    include_unchanged: bool = False
    missing: str = ""
    side_calls: dict[str, int] = field(default_factory=dict)  # endpoint -> calls that are not requests


def load_decisions(conn: sqlite3.Connection, now: float, *, include_unchanged: bool = False,
                   spill_dir: Path | None = None, limit: int = MAX_LOG_ROWS) -> DecisionsData:
    have = tables(conn)
    if "requests" not in have:
        return DecisionsData(now, missing="the ledger has no requests table yet")
    decisions = [
        DecisionRow(int(r[0]), float(r[1]), r[2] or "", r[3] or "", r[4] or "", r[5] or "unknown", r[6] or "",
                    int(r[7] or 0), r[8], r[9], r[10])
        for r in reports.decision_rows(conn, now, include_unchanged=include_unchanged, limit=limit)
    ]
    counts = reports.decision_counts(conn, now)
    side_calls = reports.side_call_counts(conn, now)
    cuts: list[CutRow] = []
    if "cuts" in have:
        from scalpel_desktop.store.spill import SpillStore

        spill = SpillStore(spill_dir)
        for c in q.cut_entries(conn, until=now, limit=limit):
            path = spill.path(c.original_sha256) if _HEX64.fullmatch(c.original_sha256 or "") else None
            cuts.append(CutRow(c.tool_use_id, c.created_at, c.session, c.agent, c.tool, c.kind, c.tokens,
                               c.original_sha256 or "", str(path) if path else "", _size(path)))
    return DecisionsData(now, decisions, cuts, counts, include_unchanged, side_calls=side_calls)


def _size(path: Path | None) -> int | None:
    try:
        return os.stat(path).st_size if path is not None else None
    except OSError:
        return None
