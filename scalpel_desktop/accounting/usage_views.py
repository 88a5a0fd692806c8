"""Usage and cost by day, month, 5-hour block and session (the views ccusage made familiar).

Input: the ledger's usage rows (``ledger_queries.usage_rows``: ts, session,
model, input, cache write 5m / 1h, cache read, output, realized tokens and
dollars), each priced with the dated price table (``Rates.cost``), the same
way ``scalpel report`` prices them. Days and months are local calendar days.

5-hour blocks follow Claude's usage windows as ccusage draws them: a block
starts at the hour of its first request and lasts five hours; a request after
the block's end, or after a gap of five hours, starts the next block. The
active block (``now`` before its end) has a burn rate: tokens per minute and
dollars per hour between its first request and ``now``, and a projection of
its total at that rate to the block's end, always labelled a projection.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Iterable

from scalpel_desktop.wire.usage import Usage

BLOCK_S = 5 * 3600.0


@dataclass
class Tally:
    """Token counts by billing tier and their cost, for one day, month, block or session."""

    key: str
    input: int = 0
    output: int = 0
    cache_write: int = 0
    cache_read: int = 0
    cost_usd: float = 0.0
    requests: int = 0
    realized_tokens: int = 0
    realized_usd: float = 0.0
    models: set[str] = field(default_factory=set)

    @property
    def total_tokens(self) -> int:
        return self.input + self.output + self.cache_write + self.cache_read

    def add(self, row: tuple, prices: Any) -> None:
        _ts, _session, model, i, w5, w1, cr, out, r_tok, r_usd = row
        u = Usage(i or 0, w5 or 0, w1 or 0, cr or 0, out or 0)
        self.input += u.input_tokens
        self.output += u.output_tokens
        self.cache_write += u.cache_write
        self.cache_read += u.cache_read
        self.cost_usd += prices.rates(model).cost(u)
        self.requests += 1
        self.realized_tokens += int(r_tok or 0)
        self.realized_usd += float(r_usd or 0.0)
        if model:
            self.models.add(model)


def _tally(rows: Iterable[tuple], prices: Any, key) -> list[Tally]:
    out: dict[str, Tally] = {}
    for r in rows:
        k = key(r)
        t = out.get(k)
        if t is None:
            t = out[k] = Tally(k)
        t.add(r, prices)
    return list(out.values())


def daily(rows: Iterable[tuple], prices: Any) -> list[Tally]:
    """One tally per local day (YYYY-MM-DD), oldest first."""
    return sorted(_tally(rows, prices, lambda r: datetime.fromtimestamp(r[0]).strftime("%Y-%m-%d")),
                  key=lambda t: t.key)


def monthly(rows: Iterable[tuple], prices: Any) -> list[Tally]:
    """One tally per local month (YYYY-MM), oldest first."""
    return sorted(_tally(rows, prices, lambda r: datetime.fromtimestamp(r[0]).strftime("%Y-%m")),
                  key=lambda t: t.key)


def by_session(rows: Iterable[tuple], prices: Any) -> dict[str, Tally]:
    return {t.key: t for t in _tally(rows, prices, lambda r: r[1] or "")}


@dataclass
class Block:
    start: float
    end: float  # start + 5 h
    first_ts: float
    last_ts: float
    tally: Tally
    active: bool = False
    tokens_per_min: float | None = None  # active block only
    usd_per_hour: float | None = None
    projected_tokens: int | None = None  # at the burn rate, to the block's end (a projection)
    projected_usd: float | None = None


def blocks(rows: Iterable[tuple], prices: Any, now: float) -> list[Block]:
    """5-hour blocks, oldest first; the last one is ``active`` when ``now`` is before its end."""
    out: list[Block] = []
    for r in rows:
        ts = float(r[0])
        b = out[-1] if out else None
        if b is None or ts >= b.end or ts - b.last_ts >= BLOCK_S:
            hour = datetime.fromtimestamp(ts).replace(minute=0, second=0, microsecond=0).timestamp()
            b = Block(hour, hour + BLOCK_S, ts, ts, Tally(datetime.fromtimestamp(hour).strftime("%Y-%m-%d %H:%M")))
            out.append(b)
        b.last_ts = max(b.last_ts, ts)
        b.tally.add(r, prices)
    if out and out[-1].start <= now < out[-1].end:
        b = out[-1]
        b.active = True
        minutes = max(1.0, (now - b.first_ts) / 60.0)
        b.tokens_per_min = b.tally.total_tokens / minutes
        b.usd_per_hour = b.tally.cost_usd / minutes * 60.0
        left_min = max(0.0, (b.end - now) / 60.0)
        b.projected_tokens = int(round(b.tally.total_tokens + b.tokens_per_min * left_min))
        b.projected_usd = b.tally.cost_usd + b.usd_per_hour * left_min / 60.0
    return out
