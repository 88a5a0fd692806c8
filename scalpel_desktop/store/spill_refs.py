"""Which spill files live conversations still point at: the keep rule of ``scalpel spill gc``.

Part of the ledger reader (``store/ledger_queries.py``): it reads the surgery
log (``cuts``) and the requests, never writes. Every cut replaced a tool
result with a stub naming its spill file, and every later request of that
conversation re-sends the stub (byte for byte, or the cache would miss), so
the model may still open that file. A spill file is *live* while a session
whose surgery log names it was seen (its latest request or cut) within its
cache's TTL plus ``spill_keep_live_hours`` (a day by default): the time in
which the conversation plausibly goes on or is resumed.

The TTL is the longer one (``wire/cache_rules.LONGEST_TTL_S``): the ledger does
not record the TTL a conversation asked for, and when unsure the longer is
assumed. A session is the unit, not each of its conversations: a sub-agent's
stubs sit in a transcript Claude Code resumes with its session, and keeping
too much here only costs disk.
"""

from __future__ import annotations

import sqlite3

from scalpel_desktop.store.ledger_queries import tables
from scalpel_desktop.wire.cache_rules import LONGEST_TTL_S


class LiveSpills:
    """The spill hashes live stubs point at, the sessions they belong to, and the window used."""

    __slots__ = ("hashes", "sessions", "since", "window_s")

    def __init__(self, hashes: frozenset[str] = frozenset(), sessions: int = 0, since: float = 0.0,
                 window_s: float = 0.0):
        self.hashes, self.sessions, self.since, self.window_s = hashes, sessions, since, window_s


def live_window_s(keep_live_hours: float) -> float:
    """How long after a conversation was last seen its spill files stay live."""
    return LONGEST_TTL_S + float(keep_live_hours) * 3600.0


def live_spills(conn: sqlite3.Connection, now: float, keep_live_hours: float) -> LiveSpills:
    """The spill files named by the cuts of every session seen since ``now`` less the window."""
    window = live_window_s(keep_live_hours)
    since = now - window
    have = tables(conn)
    if "cuts" not in have:
        return LiveSpills(frozenset(), 0, since, window)
    seen = ["SELECT session, MAX(created_at) AS last FROM cuts WHERE session IS NOT NULL AND session != '' "
            "GROUP BY session"]
    if "requests" in have:
        seen.append("SELECT session, MAX(ts) AS last FROM requests WHERE session IS NOT NULL AND session != '' "
                    "GROUP BY session")
    rows = conn.execute(
        f"""WITH seen AS ({' UNION ALL '.join(seen)}),
                 live AS (SELECT session FROM seen GROUP BY session HAVING MAX(last) >= ?)
            SELECT DISTINCT c.original_sha256, c.session FROM cuts c JOIN live l ON l.session = c.session""",
        (since,)).fetchall()
    return LiveSpills(frozenset(r[0] for r in rows if r[0]), len({r[1] for r in rows}), since, window)
