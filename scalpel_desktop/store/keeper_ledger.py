"""The cache keeper in the ledger: the user's pauses it decides from, and what its pings did.

The keeper (``surgery/keeper.py``, ``proxy/keeper.py``) writes two kinds of
rows, both with ``endpoint`` ``keepalive`` (``KEEPALIVE``): never a request of
the conversation, so no request count, gap, cost, resume point or bet sees
them, but their ``staked_usd`` and ``banked_usd`` are the user's risk budget
like every row's (``budget_ledger.risk_budget`` sums every row):

* ``decision`` ``ping``: one keep-alive request, its usage counts (the
  provider's), its cost as ``staked_usd`` (a realized loss);
* ``decision`` ``kept``: the person came back past the TTL and the read shows
  the kept prefix: the re-write avoided, less what the cold break would have
  cut for free, as ``banked_usd`` (a realized saving; ``figures`` hold the
  pings of that pause, the gap, the tokens read and the figures it was
  priced with).

``pause_history`` is what the keeper decides from: the pauses of the user's
main conversations (a subagent does not wait for a person), from an answer's
end (``ts`` + ``total_ms``) to the conversation's next request, and the
answers nobody came back to: the last request of each main conversation not
heard from for an hour (``budget_ledger.ENDED_AFTER_S``, the longest TTL)
while the ledger went on. Read once at start, off the request path.
"""

from __future__ import annotations

import sqlite3

from scalpel_desktop.store.budget_ledger import ENDED_AFTER_S
from scalpel_desktop.store.ledger_queries import _CONVERSATION, HISTORY_GAPS, has_requests

KEEPALIVE = "keepalive"  # the endpoint of the keeper's rows
PAUSES_READ = HISTORY_GAPS  # the most recent pauses read: a memory bound, not fitted
_MAIN = "(agent IS NULL OR agent = '')"


def pause_history(conn: sqlite3.Connection, until: float | None = None,
                  limit: int = PAUSES_READ) -> tuple[list[float], int]:
    """(pauses in seconds of the main conversations, answers never followed) of the ledger's rows
    received at or before ``until``."""
    if not has_requests(conn):
        return [], 0
    where = f"{_CONVERSATION} AND {_MAIN} AND session IS NOT NULL AND session != ''"
    args: list = []
    if until is not None:
        where += " AND ts <= ?"
        args.append(until)
    gaps = [max(0.0, float(r[0])) for r in conn.execute(
        f"""SELECT gap FROM (
                SELECT ts - LAG(ts + COALESCE(total_ms, 0) / 1000.0) OVER (
                           PARTITION BY session ORDER BY ts, id) AS gap, ts
                FROM requests WHERE {where})
            WHERE gap IS NOT NULL ORDER BY ts DESC LIMIT ?""", [*args, limit])]
    latest = conn.execute(f"SELECT MAX(ts) FROM requests WHERE {where}", args).fetchone()[0]
    if latest is None:
        return gaps, 0
    ended = conn.execute(
        f"""SELECT COUNT(*) FROM (SELECT MAX(ts) AS last FROM requests WHERE {where} GROUP BY session
                                  ORDER BY last DESC LIMIT ?) WHERE last < ?""",
        [*args, limit, float(latest) - ENDED_AFTER_S]).fetchone()[0]
    return gaps, int(ended)


def keeper_summary(conn: sqlite3.Connection, since: float | None = None) -> dict:
    """What the keeper did since ``since``: the pings and their cost (staked), the re-writes avoided
    and what they saved (banked); ``scalpel report`` shows it."""
    zero = {"pings": 0, "ping_cost_usd": 0.0, "kept": 0, "saved_usd": 0.0, "net_usd": 0.0}
    if not has_requests(conn):
        return zero
    where, args = "endpoint = ?", [KEEPALIVE]
    if since is not None:
        where += " AND ts >= ?"
        args.append(since)
    rows = conn.execute(f"""SELECT decision, COUNT(*), COALESCE(SUM(staked_usd), 0), COALESCE(SUM(banked_usd), 0)
                            FROM requests WHERE {where} GROUP BY decision""", args).fetchall()
    got = {str(d): (int(n), float(s), float(b)) for d, n, s, b in rows}
    pings, kept = got.get("ping", (0, 0.0, 0.0)), got.get("kept", (0, 0.0, 0.0))
    out = {"pings": pings[0], "ping_cost_usd": pings[1], "kept": kept[0], "saved_usd": kept[2]}
    out["net_usd"] = out["saved_usd"] - out["ping_cost_usd"]
    return out
