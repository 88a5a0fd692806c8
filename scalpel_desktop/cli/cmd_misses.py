"""``scalpel misses``: every cache miss the proxy saw, named and priced from the provider's usage counts."""

from __future__ import annotations

import argparse
import json
import time

from scalpel_desktop.errors import CliError

DESCRIPTION = """\
Every cache miss the proxy saw: a request whose cache read fell short of what
its conversation had cached for that model (by more than the model's minimum
cacheable length), the tokens it re-wrote and what that cost (tokens x (write -
read) at the request's TTL, from the price table), and why:

  ttl-expired       the pause outlived the cache's TTL (5 minutes or 1 hour)
  model-switch      another model was used in between
  system-changed    the system prompt changed
  tools-changed     the tool list changed (which names came and went)
  settings-changed  a setting of the message cache changed (which field)
  client-rewrite    the client rewrote an earlier message (which one)
  lookback          one turn added more blocks than the provider looks back for its
                    last entry (about 20: many parallel tool calls)
  unexplained       nothing in the bytes or the clock explains it (the provider's side)

examples:
  scalpel misses                       the last 7 days
  scalpel misses --since 24h --json
  scalpel misses --session 3f2a1b      one session (a unique prefix of its id)
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("misses", help="Cache misses: what re-wrote the cache, why, and what it cost.",
                       description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--since", metavar="WHEN", default="7d",
                   help="Since WHEN: a date (2026-11-01), date and time, or a span back (24h, 7d, 2w); default 7d.")
    p.add_argument("--session", metavar="S", help="Only this session (its id or a unique prefix).")
    p.add_argument("--json", action="store_true", help="Machine-readable output.")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    import sqlite3

    from scalpel_desktop.accounting.report import ReportError, parse_since
    from scalpel_desktop.paths import dirs, home_relative
    from scalpel_desktop.store.ledger_queries import match_sessions, open_readonly
    from scalpel_desktop.store.misses import miss_totals, misses_since

    try:
        since = parse_since(args.since) or 0.0
    except ReportError as e:
        raise CliError(str(e)) from None
    path = dirs().database
    try:
        conn = open_readonly(path)
    except sqlite3.Error as e:
        raise CliError(f"cannot open the ledger {home_relative(path)}: {e}") from None
    session = None
    rows = []
    if conn is not None:
        try:
            if args.session:
                like = match_sessions(conn, args.session, limit=3)
                if args.session in like:
                    like = [args.session]
                if not like:
                    raise CliError(f"no session {args.session!r} in the ledger; `scalpel report --by session` "
                                   "lists them")
                if len(like) > 1:
                    raise CliError(f"session prefix {args.session!r} is ambiguous: {', '.join(like[:2])}, ...; "
                                   "give more characters")
                session = like[0]
            rows = misses_since(conn, since, session)
        except sqlite3.Error as e:
            raise CliError(f"cannot read the ledger {home_relative(path)}: {e}") from None
        finally:
            conn.close()
    total = miss_totals(rows)
    if args.json:
        print(json.dumps({"since": since, "session": session, "misses": [r.as_dict() for r in rows],
                          "total": total}, indent=2))
        return 0
    _print(rows, total, since, session)
    return 0


def _print(rows, total, since: float, session: str | None) -> None:
    from scalpel_desktop.textable import Col, print_table, say, tokens_short, usd

    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(since)) if since else "the start"
    scope = f"session {session}" if session else "all sessions"
    if not rows:
        say(f"No cache miss since {when} ({scope}).")
        return
    say(f"Cache misses since {when} ({scope}): {total['count']:,}, "
        f"{tokens_short(total['tokens_rewritten'])} tokens re-written, {usd(total['cost_usd'])}.")
    print()
    cols = [Col("cause"), Col("misses", right=True), Col("cost", right=True)]
    print_table(cols, [[c, f"{v['count']:,}", usd(v["cost_usd"])] for c, v in total["by_cause"].items()])
    print()
    cols = [Col("when"), Col("session", drop=2), Col("model", drop=3), Col("cause"),
            Col("re-written", right=True), Col("cost", right=True), Col("why", wrap=True, drop=1)]
    table = [[time.strftime("%m-%d %H:%M", time.localtime(r.ts)), r.session[:8], r.model, r.cause,
              tokens_short(r.tokens_rewritten), usd(r.cost_usd), _why(r.cause, r.detail)] for r in rows[-50:]]
    print_table(cols, table)
    if len(rows) > 50:
        say(f"(the latest 50 of {len(rows):,}; --json has them all)")


def _why(cause: str, d: dict) -> str:
    if cause == "ttl-expired" and "gap_s" in d:
        return f"{d['gap_s'] / 60:.1f} min pause, {d.get('ttl', '?')} cache"
    if cause == "model-switch":
        return f"from {d.get('from', '?')}"
    if cause == "tools-changed" and ("added" in d or "removed" in d):
        parts = [f"+{n}" for n in d.get("added", [])] + [f"-{n}" for n in d.get("removed", [])]
        return " ".join(parts) or "tool list changed"
    if cause == "settings-changed" and d.get("fields"):
        return ", ".join(d["fields"])
    if cause == "lookback" and d.get("blocks_past") is not None:
        return f"marker {d['blocks_past']} blocks past the last entry"
    if cause == "client-rewrite" and d.get("break") is not None:
        return f"from message {d['break']}"
    return ""
