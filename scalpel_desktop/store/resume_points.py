"""What the ledger remembers of each conversation for its first sighting after a restart.

Why: the economist keeps its cache knowledge in memory, so a proxy restart
(a reboot, an upgrade, ``scalpel stop`` / ``start``) made every
conversation's next request a ``first-seen``: warm until known, nothing cut.
That next request is most often the morning resume, the main cold-cache
case, which a running proxy cuts for free at its ``ttl-expired`` break
(issue 26: 19,633 dead tokens kept and re-written at the write price).

Every answered request row carries its resume fields (migration m007). Read
once at start (never on the request path):

* ``resume_points``: per conversation (session, agent) and model, the
  latest row of a conversation endpoint, as a ``ResumePoint``: None fields
  when that row carries no digest (a paused pass-through, an error), so the
  caller knows the latest request is one it cannot vouch for;
* ``standings``: per conversation, its turns and what its rows banked and
  staked of the risk budget, with its usage sums per model (the caller
  prices them: the base of the conversation's cap, ``surgery/budget.py``).

And the clean-stop mark: a proxy that stopped with every row written says so
in a small file (``mark_clean_stop``); the next one takes it at start
(``take_clean_stop``). Without it (a crash, ``kill -9``, a lost row) the
ledger may be missing the latest request of a conversation, and a break read
off it is a guess.
"""

from __future__ import annotations

import json
import os
import sqlite3
from dataclasses import dataclass
from typing import Any

from scalpel_desktop.atomicfile import write_atomic
from scalpel_desktop.paths import dirs
from scalpel_desktop.store.ledger_queries import _CONVERSATION as CONVERSATION
from scalpel_desktop.store.ledger_queries import has_requests

# How far back a conversation may be resumed with its cut (seconds): a month. Bounds the
# start-up read and what is kept in memory; past it a resume is warm until known, as before.
RESUME_WINDOW_S = 30 * 24 * 3600.0
MAX_POINTS = 20_000  # the most recent conversation-model pairs kept (bounds memory, not fitted)
CLEAN_STOP_FILE = "clean_stop.json"


@dataclass(frozen=True)
class ResumePoint:
    """The latest request of one conversation and model, as the ledger holds it."""

    sent_at: float
    answered_at: float | None  # None: never answered (or the row predates m007)
    units: int | None  # messages the digest covers; None: the row carries no digest
    digest: str | None
    ttl_s: float | None


@dataclass
class Standing:
    """One conversation's past in the ledger: its turns, its part of the risk budget, its usage."""

    turns: int = 0
    banked_usd: float = 0.0
    staked_usd: float = 0.0
    # model -> (input, cache write 5m, cache write 1h, cache read, output) token sums
    usage: dict[str, tuple[int, int, int, int, int]] | None = None


def _has_resume_columns(conn: sqlite3.Connection) -> bool:
    if not has_requests(conn):
        return False
    cols = {r[1] for r in conn.execute("PRAGMA table_info(requests)")}
    return {"prefix_digest", "answered_at", "banked_usd"} <= cols


def resume_points(conn: sqlite3.Connection, now: float,
                  window_s: float = RESUME_WINDOW_S) -> dict[tuple[str, str], dict[str, ResumePoint]]:
    """{(session, agent or ''): {model: its latest request}} of the conversations seen since
    ``now - window_s`` (the most recent ``MAX_POINTS``)."""
    if not _has_resume_columns(conn):
        return {}
    rows = conn.execute(
        f"""SELECT session, COALESCE(agent, ''), COALESCE(model, ''), ts, answered_at, prefix_units,
                   prefix_digest, ttl_s
            FROM requests WHERE id IN (
                SELECT MAX(id) FROM requests
                WHERE {CONVERSATION} AND session IS NOT NULL AND session != '' AND ts >= ?
                GROUP BY session, COALESCE(agent, ''), COALESCE(model, ''))
            ORDER BY id DESC LIMIT ?""", (now - window_s, MAX_POINTS))
    out: dict[tuple[str, str], dict[str, ResumePoint]] = {}
    for session, agent, model, ts, answered, units, digest, ttl in rows:
        vouched = isinstance(digest, str) and isinstance(units, int) and answered is not None
        out.setdefault((session, agent), {})[model] = ResumePoint(
            float(ts or 0.0), float(answered) if answered is not None else None,
            units if vouched else None, digest if vouched else None, float(ttl) if ttl else None)
    return out


def standings(conn: sqlite3.Connection, keys: set[tuple[str, str]]) -> dict[tuple[str, str], Standing]:
    """The ledger's past of each conversation of ``keys``."""
    if not keys or not _has_resume_columns(conn):
        return {}
    out: dict[tuple[str, str], Standing] = {}
    sessions = sorted({s for s, _ in keys})
    for i in range(0, len(sessions), 500):  # (SQLite's bound on host parameters)
        part = sessions[i:i + 500]
        rows = conn.execute(
            f"""SELECT session, COALESCE(agent, ''), COALESCE(model, ''), COUNT(*),
                       COALESCE(SUM(banked_usd), 0), COALESCE(SUM(staked_usd), 0),
                       COALESCE(SUM(input_tokens), 0), COALESCE(SUM(cache_write_5m), 0),
                       COALESCE(SUM(cache_write_1h), 0), COALESCE(SUM(cache_read), 0),
                       COALESCE(SUM(output_tokens), 0)
                FROM requests WHERE {CONVERSATION} AND session IN ({','.join('?' * len(part))})
                GROUP BY session, COALESCE(agent, ''), COALESCE(model, '')""", part)
        for session, agent, model, n, banked, staked, *usage in rows:
            if (session, agent) not in keys:
                continue
            st = out.setdefault((session, agent), Standing(usage={}))
            st.turns += int(n)
            st.banked_usd += float(banked)
            st.staked_usd += float(staked)
            st.usage[model] = tuple(int(u) for u in usage)  # type: ignore[index]
    return out


def ledger_whole(writer: Any) -> bool:
    """Whether a closed ``LedgerWriter`` wrote every row it was given (its ``whole``, where it says;
    else: still recording, nothing dropped, nothing pending)."""
    whole = getattr(writer, "whole", None)
    if isinstance(whole, bool):
        return whole
    return bool(getattr(writer, "enabled", False)) and not getattr(writer, "dropped", 1) \
        and getattr(writer, "pending", 1) == 0


def mark_clean_stop(at: float) -> None:
    """This proxy stopped with every row it was given written: the ledger is whole up to ``at``."""
    path = dirs().state / CLEAN_STOP_FILE
    write_atomic(path, json.dumps({"at": at, "pid": os.getpid()}).encode("utf-8"), fsync=True)


def take_clean_stop() -> float | None:
    """When the previous proxy stopped cleanly (None: it did not say so); the mark is taken, so a
    proxy that crashes after this one started cannot vouch for the ledger."""
    path = dirs().state / CLEAN_STOP_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = None
    try:
        path.unlink()
    except OSError:
        pass
    at = data.get("at") if isinstance(data, dict) else None
    return float(at) if isinstance(at, (int, float)) and not isinstance(at, bool) else None
