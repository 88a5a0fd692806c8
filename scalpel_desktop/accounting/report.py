"""Aggregations over the ledger: what was sent, what it cost, what was saved.

Pure over a sqlite3 connection: the rows come from the ledger reader's
``report_rows`` (``store/ledger_queries.py``), the sums are made here
(``scalpel report`` and the dashboard's savings tab call it).
Tokens are summed by billing tier from the provider's usage counts; cost is
each row's usage priced at its model's rates (so mixed-model groups are priced
correctly, long-context premiums included), with the price table's ``as_of``.

Requests are what the provider answers and bills as turns. Side calls (Claude
Code's ``count_tokens`` calls, ``store/ledger_reports.py`` tells them apart) are
counted apart, per endpoint (``side_calls``), and never in ``requests``, a cost,
a decision count or a saving: so a session's request count is the one Claude
Code's ``/cost`` shows.

Savings come in two kinds, never mixed:

* realized: what stages recorded from requests that were actually changed
  (``realized_tokens`` / ``realized_usd``: the bytes removed times the
  conversation's tokens per byte measured from its usage, priced at the tier
  each removed token would have been billed at), with the error bound the
  rows' ratios carry (``error_usd``) and the dollars whose ratio has none
  (``unbounded_usd``: a conversation too short to calibrate);
* projected: the estimated ``tokens_removed`` of requests, with the
  weight used to price them stated (one cache read of each removed token per
  later turn, at the model's cache-read rate).
"""

from __future__ import annotations

import re
import sqlite3
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from scalpel_desktop.accounting.prices import PriceTable
from scalpel_desktop.decisions import is_change
from scalpel_desktop.store.ledger_reports import report_rows
from scalpel_desktop.wire.usage import Usage

BY_CHOICES = ("day", "session", "model")
TIER_COLUMNS = {
    "input": "input_tokens",
    "write_5m": "cache_write_5m",
    "write_1h": "cache_write_1h",
    "cache_read": "cache_read",
    "output": "output_tokens",
}
PROJECTED_WEIGHT = "each removed token priced once at its model's cache-read rate (the saving per later turn)"

_REL = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([mhdw])\s*$", re.IGNORECASE)
_UNIT_S = {"m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


class ReportError(ValueError):
    pass


def parse_since(text: str | None, now: float | None = None) -> float | None:
    """``2026-11-01`` (local midnight), ``2026-11-01T08:00``, or relative ``30m``/``24h``/``7d``/``2w``."""
    if text is None or not str(text).strip():
        return None
    now = time.time() if now is None else now
    m = _REL.match(str(text))
    if m:
        return now - float(m.group(1)) * _UNIT_S[m.group(2).lower()]
    try:
        return datetime.fromisoformat(str(text).strip()).timestamp()
    except ValueError:
        raise ReportError(
            f"--since {text!r}: expected a date (2026-11-01), a date and time (2026-11-01T08:00) "
            "or a span back from now (30m, 24h, 7d, 2w)"
        ) from None


@dataclass
class Totals:
    requests: int = 0
    with_usage: int = 0
    errors: int = 0
    tokens: dict[str, int] = field(default_factory=lambda: {t: 0 for t in TIER_COLUMNS})
    cost_usd: float = 0.0
    body_bytes: int = 0
    sent_bytes: int = 0
    decisions: dict[str, int] = field(default_factory=dict)
    realized_tokens: int = 0
    realized_usd: float = 0.0
    realized_error_usd: float = 0.0  # the sum of each row's bound (its ratio's error x its dollars)
    realized_unbounded_usd: float = 0.0  # dollars converted with a ratio that has no bound (own_request)
    realized_sources: dict[str, int] = field(default_factory=dict)  # rows per tokens source
    changed_requests: int = 0
    projected_tokens: int = 0
    projected_usd: float = 0.0
    first_ts: float | None = None
    last_ts: float | None = None
    side_calls: dict[str, int] = field(default_factory=dict)  # endpoint -> calls that are not requests

    @property
    def prompt_tokens(self) -> int:
        t = self.tokens
        return t["input"] + t["write_5m"] + t["write_1h"] + t["cache_read"]

    @property
    def cache_share(self) -> float | None:
        """cache_read / prompt tokens (None when no usage was recorded)."""
        p = self.prompt_tokens
        return self.tokens["cache_read"] / p if p else None

    def add(self, row: sqlite3.Row | tuple, prices: PriceTable, assumed: dict[str, str]) -> None:
        (ts, model, status, body, sent, i, w5, w1, cr, out, decision, removed, r_tok, r_usd, error,
         tokens_by, error_pct, side_call) = row
        if side_call is not None:
            self.side_calls[side_call] = self.side_calls.get(side_call, 0) + 1
            return
        self.requests += 1
        self.first_ts = ts if self.first_ts is None or (ts is not None and ts < self.first_ts) else self.first_ts
        self.last_ts = ts if self.last_ts is None or (ts is not None and ts > self.last_ts) else self.last_ts
        self.body_bytes += body or 0
        self.sent_bytes += sent or 0
        if error or (status is not None and status >= 400):
            self.errors += 1
        d = decision or "unknown"
        self.decisions[d] = self.decisions.get(d, 0) + 1
        rates = prices.rates(model)
        if rates.assumed:
            assumed[model or ""] = rates.label
        if any(v is not None for v in (i, w5, w1, cr, out)):
            u = Usage(i or 0, w5 or 0, w1 or 0, cr or 0, out or 0)
            self.with_usage += 1
            for tier, v in zip(TIER_COLUMNS, (u.input_tokens, u.cache_write_5m, u.cache_write_1h, u.cache_read,
                                              u.output_tokens)):
                self.tokens[tier] += v
            self.cost_usd += rates.cost(u)
        if r_tok is not None or r_usd is not None:
            self.realized_tokens += r_tok or 0
            self.realized_usd += r_usd or 0.0
            source = tokens_by or "estimate"  # rows from before m004 were converted with the estimator
            self.realized_sources[source] = self.realized_sources.get(source, 0) + 1
            if error_pct is not None:
                self.realized_error_usd += abs(r_usd or 0.0) * error_pct / 100.0
            else:
                self.realized_unbounded_usd += abs(r_usd or 0.0)
        if is_change(decision):
            self.changed_requests += 1
        if removed:
            self.projected_tokens += removed
            self.projected_usd += rates.price_tokens("cache_read", removed)

    def as_dict(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "with_usage": self.with_usage,
            "errors": self.errors,
            "tokens": dict(self.tokens),
            "prompt_tokens": self.prompt_tokens,
            "cost_usd": self.cost_usd,
            "cache_share": self.cache_share,
            "body_bytes": self.body_bytes,
            "sent_bytes": self.sent_bytes,
            "decisions": dict(sorted(self.decisions.items())),
            "realized": {"tokens": self.realized_tokens, "usd": self.realized_usd,
                         "error_usd": self.realized_error_usd, "unbounded_usd": self.realized_unbounded_usd,
                         "sources": dict(sorted(self.realized_sources.items())), "tier": "usage"},
            "projected": {"tokens": self.projected_tokens, "usd": self.projected_usd,
                          "changed_requests": self.changed_requests},
            "first_ts": self.first_ts,
            "last_ts": self.last_ts,
            "side_calls": dict(sorted(self.side_calls.items())),
        }


def build_report(
    conn: sqlite3.Connection,
    *,
    since: float | None = None,
    until: float | None = None,
    by: str | None = None,
    prices: PriceTable | None = None,
) -> dict[str, Any]:
    """The report as plain data (what ``scalpel report --json`` prints)."""
    if by is not None and by not in BY_CHOICES:
        raise ReportError(f"--by {by!r}: one of {', '.join(BY_CHOICES)}")
    prices = prices or PriceTable.load()
    total = Totals()
    groups: dict[Any, Totals] = {}
    assumed: dict[str, str] = {}
    for r in report_rows(conn, since=since, until=until, group=by):
        row = tuple(r)
        total.add(row[1:], prices, assumed)
        if by is not None:
            key = _day(row[0]) if by == "day" else row[0]
            groups.setdefault(key, Totals()).add(row[1:], prices, assumed)
    out_groups = []
    for key, t in groups.items():
        if t.requests:  # a group of side calls alone has no request to report (the total counts them)
            out_groups.append({"key": key if key is not None else "(none)", **t.as_dict()})
    if by == "day":
        out_groups.sort(key=lambda g: g["key"])
    elif by is not None:
        out_groups.sort(key=lambda g: -g["cost_usd"])
    return {
        "since": since,
        "until": until,
        "by": by,
        "prices": {"as_of": prices.as_of, "source": prices.source, "warnings": list(prices.warnings)},
        "assumed_prices": dict(sorted(assumed.items())),
        "projected_weight": PROJECTED_WEIGHT,
        "total": total.as_dict(),
        "groups": out_groups,
    }


def _day(ts: float | None) -> str:
    return "(none)" if ts is None else datetime.fromtimestamp(ts).strftime("%Y-%m-%d")
