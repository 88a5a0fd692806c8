"""The risk budget as the ledger holds it: what the cuts banked, what the bets staked, how each bet did.

Every request row carries ``banked_usd`` (what its replayed stubs surely
saved) and ``staked_usd`` (a warm cut's priced extra; migration m006). So the
user's budget is two sums over the ledger, the same after any restart, and a
bet's outcome needs no table of its own: the rows of its conversation after
it say how many requests it kept earning on before the next natural break (a
row whose decision names a cold break reason) or the conversation's last
request. The reader of these columns; the writer is the ledger's
(``pipeline/record.py`` builds the row).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass

from scalpel_desktop.store.ledger_queries import _CONVERSATION as CONVERSATION
from scalpel_desktop.store.ledger_queries import has_requests
from scalpel_desktop.wire.cache_rules import COLD_BREAKS, TTL_SECONDS, overrun

BETS_READ = 500  # the most recent bets read: bounds the work at start, not fitted
# A conversation not heard from for the longest cache TTL (1 h) while the ledger went on has ended
# for its bets: any request after that would find its cache expired, a break that closes them anyway.
ENDED_AFTER_S = 3600.0
_NOT_KEEPER = "COALESCE(endpoint, '') != 'keepalive'"  # (store/keeper_ledger.KEEPALIVE)


@dataclass(frozen=True)
class Bet:
    """One warm cut and how it did."""

    ts: float
    session: str
    agent: str
    stake_usd: float  # its priced extra
    turns_est: int  # the later requests the economist counted on
    payback_usd: float  # what it expected to save over them (its figures' ``payback_usd``)
    turns: int  # the later requests it really earned on (before the next break, or the last one)
    closed: bool  # a break (or a later bet's end) closed it; False: the conversation may go on

    @property
    def earned_usd(self) -> float:
        """Its saving over the requests it earned on, at the rate it expected per request."""
        per = self.payback_usd / self.turns_est if self.turns_est > 0 else 0.0
        return per * self.turns

    @property
    def lost_usd(self) -> float:
        """What it did not earn back of its stake (0 for one that paid)."""
        return max(0.0, self.stake_usd - self.earned_usd)


def _has_budget(conn: sqlite3.Connection) -> bool:
    if not has_requests(conn):
        return False
    cols = {r[1] for r in conn.execute("PRAGMA table_info(requests)")}
    return "banked_usd" in cols and "staked_usd" in cols


def risk_budget(conn: sqlite3.Connection, until: float | None = None) -> tuple[float, float]:
    """(saved, staked) dollars over the whole ledger (rows received at or before ``until``)."""
    if not _has_budget(conn):
        return 0.0, 0.0
    where, args = ("WHERE ts <= ?", [until]) if until is not None else ("", [])
    row = conn.execute(f"SELECT COALESCE(SUM(banked_usd), 0), COALESCE(SUM(staked_usd), 0) FROM requests {where}",
                       args).fetchone()
    return float(row[0]), float(row[1])


def bets(conn: sqlite3.Connection, since: float | None = None, until: float | None = None,
         limit: int = BETS_READ) -> list[Bet]:
    """The most recent warm cuts (oldest first) with the requests each earned on."""
    if not _has_budget(conn):
        return []
    # (a keep-alive ping stakes too, ``store/keeper_ledger.py``: not a bet, and no request after one)
    where, args = f"staked_usd IS NOT NULL AND staked_usd != 0 AND {_NOT_KEEPER}", []
    if since is not None:
        where += " AND ts >= ?"
        args.append(since)
    if until is not None:
        where += " AND ts <= ?"
        args.append(until)
    rows = conn.execute(f"""SELECT id, ts, session, COALESCE(agent, ''), staked_usd, figures FROM requests
                            WHERE {where} ORDER BY ts DESC, id DESC LIMIT ?""", [*args, limit]).fetchall()
    latest = conn.execute("SELECT MAX(ts) FROM requests").fetchone()[0] or 0.0
    out = []
    for rid, ts, session, agent, stake, figures in reversed(rows):
        fig = _figures(figures)
        turns_est = int(fig.get("turns_est") or 0)
        later = conn.execute(f"""SELECT figures, ts FROM requests
                                WHERE session IS ? AND COALESCE(agent, '') = ? AND (ts > ? OR (ts = ? AND id > ?))
                                      AND {_NOT_KEEPER}
                                ORDER BY ts, id LIMIT ?""",
                             (session, agent, ts, ts, rid, turns_est + 1 if turns_est > 0 else 1)).fetchall()
        turns, closed = earned_turns(turns_est, (_figures(f).get("break_reason") for f, _ in later))
        if latest - (float(later[-1][1]) if later else float(ts)) > ENDED_AFTER_S:
            closed = True  # the conversation has not been heard from since: it ended
        out.append(Bet(float(ts), session or "", agent, float(stake), turns_est,
                       float(fig.get("payback_usd") or 0.0), turns, closed))
    return out


def earned_turns(turns_est: int, later_breaks: Iterable[str | None]) -> tuple[int, bool]:
    """(the requests a bet earned on, closed?): the requests after it before the first cold break
    (``wire/cache_rules.COLD_BREAKS``: a cut there would have been free), at most its estimate;
    closed by that break or by reaching the estimate (whatever comes next, it paid as priced). The
    one rule for the ledger's bets and the bench's (``bench/stage_driver.StageDriver.bet_outcomes``)."""
    turns = 0
    for reason in later_breaks:
        if reason in COLD_BREAKS:
            return turns, True
        turns += 1
        if turns_est > 0 and turns >= turns_est:
            return turns_est, True
    return turns, False


def _figures(text: str | None) -> dict:
    try:
        got = json.loads(text) if text else {}
    except ValueError:
        return {}
    return got if isinstance(got, dict) else {}


def ttl_overruns(conn: sqlite3.Connection, limit: int = 2000) -> list[tuple[float, bool]]:
    """(seconds past the TTL, entries read?) of the most recent requests that followed a gap past their
    conversation's TTL (``wire/cache_rules.overrun``; ``surgery/ttl_margin.py`` learns the margin from
    them): the gap runs from the previous answer's end; the TTL is the conversation's, 1 h when any of
    its requests wrote at the 1-hour rate (a request that only read shows no TTL of its own)."""
    if not has_requests(conn):
        return []
    rows = conn.execute(f"""SELECT gap, prev_read, prev_1h, cache_read FROM (
            SELECT ts - LAG(ts + COALESCE(total_ms, 0) / 1000.0) OVER w AS gap,
                   LAG(cache_read) OVER w AS prev_read, cache_read, ts,
                   MAX(COALESCE(cache_write_1h, 0)) OVER (PARTITION BY session, COALESCE(agent, ''), model) AS prev_1h
            FROM requests WHERE {CONVERSATION} AND session IS NOT NULL AND session != ''
            WINDOW w AS (PARTITION BY session, COALESCE(agent, ''), model ORDER BY ts, id))
        WHERE gap IS NOT NULL ORDER BY ts DESC LIMIT ?""", (limit,)).fetchall()
    out = []
    for gap, prev_read, prev_1h, read in reversed(rows):
        ttl = TTL_SECONDS["1h"] if (prev_1h or 0) > 0 else TTL_SECONDS["5m"]
        seen = overrun(float(gap), ttl, prev_read, read)
        if seen is not None:
            out.append(seen)
    return out


def budget_summary(conn: sqlite3.Connection, since: float | None = None) -> dict:
    """The risk budget as ``scalpel report`` and the dashboard show it: what the cuts banked and the bets
    staked over the whole ledger (the balance warm cuts draw on), and since ``since``: the bets made,
    what those that closed did not earn back (lost), how many may still be earning."""
    saved, staked = risk_budget(conn)
    made = bets(conn, since=since)
    closed = [b for b in made if b.closed]
    return {"saved_usd": saved, "staked_usd": staked, "balance_usd": saved - staked,
            "bets": len(made), "bets_open": len(made) - len(closed),
            "bets_lost_usd": sum(b.lost_usd for b in closed),
            "turns_estimated": sum(b.turns_est for b in closed), "turns_earned": sum(b.turns for b in closed)}
