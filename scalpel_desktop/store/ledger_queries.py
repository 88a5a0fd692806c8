"""The ledger's named read-only queries: every frontend asks these, none writes SQL.

The writer (``store/ledger.py``) and the surgery log (``store/cutlog.py``) write
the ``requests`` and ``cuts`` tables; this module is where everything else
reads them: the tray, the statusline, ``scalpel start``/``status``, the
dashboard, ``scalpel report`` and ``log``, and the hooks. One question, one
function, so the tray, the statusline and the dashboard cannot disagree on
what "saved today" means.

* ``open_readonly`` is the one read-only opener (None when no ledger exists yet;
  it never creates or migrates anything).
* ``with_ledger(default, query, ...)`` opens, asks, closes and answers
  ``default`` on any SQLite error: for the tray, the statusline and the
  proxy's status, which must keep working before the first request.
* The queries take an open connection and, where a time window applies, the
  end of it (``until``, inclusive), so the dashboard's tests freeze the clock.

Import-light on purpose: the hooks and the statusline import this on every run
under a measured start-up budget (``benchmarks/hooks_latency.py``), so only
``sqlite3`` is imported at the top, and the result types are plain classes
(``dataclasses`` pulls in ``inspect``).
"""

from __future__ import annotations

import sqlite3

CONVERSATION_ENDPOINTS = ("messages", "chat", "responses")
_CONVERSATION = "endpoint IN (" + ",".join(f"'{e}'" for e in CONVERSATION_ENDPOINTS) + ")"
# A request is what the provider answers and bills as a turn: a conversation endpoint (a row
# without an endpoint, from a hand-made ledger, counts as one). Anything else the client sent
# through the proxy (Claude Code's ``count_tokens`` calls above all) is a *side call*: counted
# apart wherever requests are counted, never in a request count or a cost.
_REQUEST = f"(endpoint IS NULL OR {_CONVERSATION})"
_MAIN = "(agent IS NULL OR agent = '')"
HOOK_TIMEOUT_S = 0.2  # the hooks and the statusline never wait long on a busy database


# -- the connection -------------------------------------------------------------------


def open_readonly(path=None, *, timeout: float = 5.0) -> sqlite3.Connection | None:
    """A read-only connection to the ledger, or None when no ledger file exists yet."""
    from pathlib import Path

    if path is None:
        from scalpel_desktop.paths import dirs

        path = dirs().database
    path = Path(path)
    if not path.exists():
        return None
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=timeout, check_same_thread=False)


def with_ledger(default, query, *args, db=None, timeout: float = HOOK_TIMEOUT_S, **kwargs):
    """``query(conn, *args, **kwargs)`` on a fresh read-only connection; ``default`` when
    there is no ledger yet or SQLite fails (missing table, locked, unreadable)."""
    try:
        conn = open_readonly(db, timeout=timeout)
    except sqlite3.Error:
        return default
    if conn is None:
        return default
    try:
        return query(conn, *args, **kwargs)
    except sqlite3.Error:
        return default
    finally:
        conn.close()


def tables(conn: sqlite3.Connection) -> set[str]:
    return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def _columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}


def has_requests(conn: sqlite3.Connection) -> bool:
    """Whether the ledger has its ``requests`` table (a new file may not, yet)."""
    return conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='requests'").fetchone() is not None


def ledger_version(conn: sqlite3.Connection) -> tuple:
    """Changes whenever a request or a cut is recorded (the dashboard re-reads only then)."""
    have = tables(conn)
    req = conn.execute("SELECT COALESCE(MAX(id), 0) FROM requests").fetchone()[0] if "requests" in have else 0
    cuts = tuple(conn.execute("SELECT COUNT(*), MAX(created_at) FROM cuts").fetchone()) if "cuts" in have else ()
    return int(req or 0), cuts


# -- savings -------------------------------------------------------------------------


class Savings:
    """Realized savings over a window, the requests recorded in it, and the side calls
    (``count_tokens``, ...) apart: they are not requests."""

    __slots__ = ("tokens", "usd", "requests", "since", "side_calls")

    def __init__(self, tokens: int = 0, usd: float = 0.0, requests: int = 0, since: float | None = None,
                 side_calls: int = 0):
        self.tokens, self.usd, self.requests, self.since = tokens, usd, requests, since
        self.side_calls = side_calls

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Savings) and (self.tokens, self.usd, self.requests) == (
            other.tokens, other.usd, other.requests)

    def __repr__(self) -> str:
        return f"Savings(tokens={self.tokens}, usd={self.usd}, requests={self.requests}, since={self.since})"


def savings_since(conn: sqlite3.Connection, since: float, until: float | None = None) -> Savings:
    """Realized tokens and dollars, and the number of requests, with ``since <= ts`` (and
    ``ts <= until`` when given); side calls counted apart. Only the ``realized_*`` columns of
    requests count: projections are apart."""
    sql = (f"SELECT COALESCE(SUM(CASE WHEN {_REQUEST} THEN realized_tokens END), 0), "
           f"COALESCE(SUM(CASE WHEN {_REQUEST} THEN realized_usd END), 0), "
           f"COALESCE(SUM(CASE WHEN {_REQUEST} THEN 1 ELSE 0 END), 0), COUNT(*) FROM requests WHERE ts >= ?")
    args: list = [since]
    if until is not None:
        sql += " AND ts <= ?"
        args.append(until)
    tokens, usd, n, rows = conn.execute(sql, args).fetchone()
    return Savings(int(tokens), float(usd), int(n), since, int(rows) - int(n))


def today_savings(conn: sqlite3.Connection, now: float | None = None) -> Savings:
    """Savings since local midnight (``clock.start_of_today``, test clock honoured) up to ``now``.
    Every "saved today" figure shown anywhere is this one."""
    from scalpel_desktop import clock

    now = clock.now() if now is None else now
    return savings_since(conn, clock.start_of_today(now), now)


def today_savings_or_zero(db=None, now: float | None = None) -> Savings:
    """``today_savings`` on its own connection; zeros (never an error) without a ledger."""
    from scalpel_desktop import clock

    return with_ledger(Savings(since=clock.start_of_today(now)), today_savings, now, db=db)


def today_savings_or_unknown(db=None, now: float | None = None,
                             timeout: float = HOOK_TIMEOUT_S) -> tuple[Savings | None, str]:
    """``(today_savings, "")``; zeros without a ledger yet (nothing happened today: true), but
    ``(None, why)`` when a ledger is there and cannot be read (a garbage file, a directory, locked):
    then today's figures are unknown, and saying 0 would be a lie."""
    from scalpel_desktop import clock

    try:
        conn = open_readonly(db, timeout=timeout)
    except sqlite3.Error as e:
        return None, f"{type(e).__name__}: {e}"
    if conn is None:
        return Savings(since=clock.start_of_today(now)), ""
    try:
        if not has_requests(conn):
            return Savings(since=clock.start_of_today(now)), ""
        return today_savings(conn, now), ""
    except sqlite3.Error as e:
        return None, f"{type(e).__name__}: {e}"
    finally:
        conn.close()


# -- sessions ------------------------------------------------------------------------


class SessionFigures:
    """One session's figures over its conversation requests (messages, chat, responses).

    *context* is the prompt of the latest main-agent request as the provider
    counted it (input + cache writes + cache reads), ``context_source``
    "usage"; without usage counts, the proxy's estimate of the body sent,
    "estimate". ``cache_share`` is cache reads / prompt tokens over the last
    ``recent`` requests that carried usage counts (sub-agents included).
    """

    __slots__ = ("session", "turns", "subagent_requests", "last_ts", "realized_tokens", "realized_usd", "model",
                 "context_tokens", "context_source", "context_cache_read", "cache_share", "cache_requests",
                 "last_decision", "last_reason")

    def __init__(self, session: str):
        self.session = session
        self.turns = 0  # main-agent requests
        self.subagent_requests = 0
        self.last_ts = 0.0
        self.realized_tokens = 0
        self.realized_usd = 0.0
        self.model = ""
        self.context_tokens: int | None = None
        self.context_source = ""  # "usage" | "estimate" | ""
        self.context_cache_read: int | None = None  # cache reads of that latest request (usage only)
        self.cache_share: float | None = None
        self.cache_requests = 0
        self.last_decision = ""
        self.last_reason = ""

    @property
    def requests(self) -> int:
        return self.turns + self.subagent_requests


def session_figures(conn: sqlite3.Connection, session: str, until: float | None = None,
                    recent: int = 10) -> SessionFigures | None:
    """The figures of ``session`` (requests with ``ts <= until``), or None when it has none."""
    if not session:
        return None
    where = f"session = ? AND {_CONVERSATION}"
    args: list = [session]
    if until is not None:
        where += " AND ts <= ?"
        args.append(until)
    turns, sub, last_ts, r_tok, r_usd = conn.execute(
        f"""SELECT SUM(CASE WHEN {_MAIN} THEN 1 ELSE 0 END), SUM(CASE WHEN {_MAIN} THEN 0 ELSE 1 END),
                   MAX(ts), COALESCE(SUM(realized_tokens), 0), COALESCE(SUM(realized_usd), 0.0)
            FROM requests WHERE {where}""", args).fetchone()
    if last_ts is None:
        return None
    out = SessionFigures(session)
    out.turns, out.subagent_requests, out.last_ts = int(turns or 0), int(sub or 0), float(last_ts)
    out.realized_tokens, out.realized_usd = int(r_tok or 0), float(r_usd or 0.0)
    model, i, w5, w1, cr, est_after, est_before = conn.execute(
        f"""SELECT model, input_tokens, cache_write_5m, cache_write_1h, cache_read, est_tokens_after,
                   est_tokens_before
            FROM requests WHERE {where}
            ORDER BY (CASE WHEN {_MAIN} THEN 0 ELSE 1 END), ts DESC, id DESC LIMIT 1""", args).fetchone()
    out.model = model or ""
    if any(v is not None for v in (i, w5, w1, cr)):
        out.context_tokens, out.context_source = (i or 0) + (w5 or 0) + (w1 or 0) + (cr or 0), "usage"
        out.context_cache_read = cr or 0
    elif est_after is not None or est_before is not None:
        out.context_tokens = int(est_after if est_after is not None else est_before)
        out.context_source = "estimate"
    rows = conn.execute(
        f"""SELECT COALESCE(input_tokens, 0) + COALESCE(cache_write_5m, 0) + COALESCE(cache_write_1h, 0)
                     + COALESCE(cache_read, 0), COALESCE(cache_read, 0)
            FROM requests WHERE {where} AND (input_tokens IS NOT NULL OR cache_read IS NOT NULL)
            ORDER BY ts DESC, id DESC LIMIT ?""", [*args, recent]).fetchall()
    prompt = sum(r[0] for r in rows)
    out.cache_share = (sum(r[1] for r in rows) / prompt) if prompt else None
    out.cache_requests = len(rows)
    decision, reason = conn.execute(
        f"SELECT decision, reason FROM requests WHERE {where} ORDER BY ts DESC, id DESC LIMIT 1", args).fetchone()
    out.last_decision, out.last_reason = decision or "", reason or ""
    return out


def recent_sessions(conn: sqlite3.Connection, since: float, until: float, limit: int) -> list[str]:
    """Sessions with a conversation request in ``[since, until]``, the most recent first."""
    return [r[0] for r in conn.execute(
        f"""SELECT session, MAX(ts) FROM requests
            WHERE ts >= ? AND ts <= ? AND session IS NOT NULL AND session != '' AND {_CONVERSATION}
            GROUP BY session ORDER BY MAX(ts) DESC LIMIT ?""", (since, until, limit))]


# -- reports and the decisions log: ``store/ledger_reports.py`` (to keep this module small) -------


# -- the surgery log ------------------------------------------------------------------


class CutEntry:
    """One row of the surgery log, with the name of the tool whose result was cut and the file
    that call worked on ("" when the tool inventory did not record them)."""

    __slots__ = ("tool_use_id", "session", "agent", "created_at", "kind", "tokens", "original_sha256",
                 "stub_version", "stub_sha256", "tool", "target")

    def __init__(self, row: tuple):
        (self.tool_use_id, session, agent, created_at, self.kind, tokens, self.original_sha256,
         stub_version, self.stub_sha256, tool, target) = row
        self.session, self.agent, self.tool, self.target = session or "", agent or "", tool or "", target or ""
        self.created_at, self.tokens, self.stub_version = float(created_at), int(tokens), int(stub_version)


def cut_entries(conn: sqlite3.Connection, *, session: str | None = None, until: float | None = None,
                limit: int | None = 50) -> list[CutEntry]:
    """The surgery log, newest first: one session's cuts, or everyone's."""
    have_calls = "tool_calls" in tables(conn)
    target = "t.target" if have_calls and "target" in _columns(conn, "tool_calls") else "NULL"
    join = "LEFT JOIN tool_calls t ON t.session = c.session AND t.tool_use_id = c.tool_use_id" if have_calls else ""
    where, args = [], []
    if session is not None:
        where.append("c.session = ?")
        args.append(session)
    if until is not None:
        where.append("c.created_at <= ?")
        args.append(until)
    sql = (f"""SELECT c.tool_use_id, c.session, c.agent, c.created_at, c.kind, c.tokens, c.original_sha256,
                      c.stub_version, c.stub_sha256, {'t.name' if have_calls else 'NULL'}, {target}
               FROM cuts c {join}""" + (" WHERE " + " AND ".join(where) if where else "")
           + " ORDER BY c.created_at DESC, c.tool_use_id")
    if limit is not None:
        sql += " LIMIT ?"
        args.append(int(limit))
    return [CutEntry(r) for r in conn.execute(sql, args)]


def cut_sessions(conn: sqlite3.Connection, prefix: str, limit: int = 3) -> list[str]:
    """Sessions in the surgery log whose id starts with ``prefix`` (at most ``limit``)."""
    escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return [r[0] for r in conn.execute(
        "SELECT DISTINCT session FROM cuts WHERE session LIKE ? ESCAPE '\\' LIMIT ?", (escaped + "%", limit))]


def cut_exists(conn: sqlite3.Connection, tool_use_id: str) -> bool:
    """Whether the surgery log holds a cut of ``tool_use_id``."""
    return conn.execute("SELECT 1 FROM cuts WHERE tool_use_id = ?", (tool_use_id,)).fetchone() is not None


# -- the user's own history (the warm policies' remaining turns) -----------------------

HISTORY_CONVERSATIONS = 2000  # the most recent conversations read: bounds memory, not fitted
HISTORY_GAPS = 20000


def conversation_history(conn: sqlite3.Connection, until: float | None = None,
                         conversations: int = HISTORY_CONVERSATIONS,
                         gaps: int = HISTORY_GAPS) -> tuple[list[int], list[float]]:
    """(requests per conversation, idle gaps in seconds) of the ledger's most recent conversations.

    A conversation is a (session, agent) pair, as the economist keys it; its
    requests are those of the conversation endpoints with ``ts <= until``. A gap
    runs from a response's end (``ts`` + ``total_ms``) to the conversation's next
    request; requests without a timing count from their arrival."""
    if not has_requests(conn):
        return [], []
    where = f"{_CONVERSATION} AND session IS NOT NULL AND session != ''"
    args: list = []
    if until is not None:
        where += " AND ts <= ?"
        args.append(until)
    lengths = [int(r[0]) for r in conn.execute(
        f"""SELECT COUNT(*) FROM requests WHERE {where}
            GROUP BY session, COALESCE(agent, '') ORDER BY MAX(ts) DESC LIMIT ?""", [*args, conversations])]
    rows = conn.execute(
        f"""SELECT gap FROM (
                SELECT ts - LAG(ts + COALESCE(total_ms, 0) / 1000.0) OVER (
                           PARTITION BY session, COALESCE(agent, '') ORDER BY ts, id) AS gap, ts
                FROM requests WHERE {where})
            WHERE gap IS NOT NULL ORDER BY ts DESC LIMIT ?""", [*args, gaps])
    return lengths, [max(0.0, float(r[0])) for r in rows]


def cut_decisions(conn: sqlite3.Connection, entries) -> dict[str, tuple[str, str | None]]:
    """For each cut of ``entries`` (``CutEntry``), the decision that made it: (reason, figures JSON)
    of the latest request of its session and agent that made new cuts (its decision names
    ``cut``, ``decisions.py``) received at or before the cut."""
    if not entries or not has_requests(conn):
        return {}
    out: dict[str, tuple[str, str | None]] = {}
    for e in entries:
        row = conn.execute(
            """SELECT reason, figures FROM requests
               WHERE session = ? AND COALESCE(agent, '') = ? AND (decision = 'cut' OR decision LIKE 'cut+%')
                     AND ts <= ?
               ORDER BY ts DESC, id DESC LIMIT 1""", (e.session, e.agent or "", e.created_at)).fetchone()
        if row is not None:
            out[e.tool_use_id] = (row[0] or "", row[1])
    return out


def match_sessions(conn: sqlite3.Connection, prefix: str, limit: int = 3) -> list[str]:
    """Sessions (in the requests or the surgery log) whose id starts with ``prefix``, at most ``limit``:
    how a unique prefix is accepted wherever a session id is."""
    escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    have = tables(conn)
    parts, args = [], []
    for table in ("requests", "cuts"):
        if table in have:
            parts.append(f"SELECT DISTINCT session FROM {table} WHERE session LIKE ? ESCAPE '\\'")
            args.append(escaped)
    if not parts:
        return []
    return [r[0] for r in conn.execute(" UNION ".join(parts) + " ORDER BY 1 LIMIT ?", [*args, limit])]


# The dashboard's everyday views (usage rows, projects, the context breakdown) are named queries
# of this reader too, kept in ``store/ledger_views.py`` to keep this module small.
