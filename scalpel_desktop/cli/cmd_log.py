"""``scalpel log [SESSION]``: what the surgeon cut, when, why, how much, and where the original is."""

from __future__ import annotations

import argparse
import json
import time

from scalpel_desktop.errors import CliError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "log",
        help="Show the surgery log: what was cut, when, why, how much, the spill file.",
        description="Show the surgery log, most recent first: every tool result scalpel replaced with a stub, "
                    "the reason, its estimated size and the spill file holding the original "
                    "(print it with `scalpel spill show HASH`).",
    )
    p.add_argument("session", nargs="?", metavar="SESSION", help="Only this session id (or a unique prefix).")
    p.add_argument("--limit", type=int, default=50, metavar="N", help="At most N cuts (default 50).")
    p.add_argument("--json", action="store_true", help="Machine-readable output.")
    p.set_defaults(func=_log)


def _records(session: str | None, limit: int):
    import sqlite3

    from scalpel_desktop.paths import dirs
    from scalpel_desktop.store.ledger_queries import cut_entries, cut_sessions, open_readonly

    try:
        conn = open_readonly()
    except sqlite3.Error as e:
        raise CliError(f"cannot open {dirs().database}: {e}") from None
    if conn is None:
        return []
    try:
        if session is None:
            return cut_entries(conn, limit=limit)
        recs = cut_entries(conn, session=session, limit=limit)
        if recs:
            return recs
        like = cut_sessions(conn, session, limit=3)
        if len(like) > 1:
            raise CliError(f"session prefix {session!r} is ambiguous")
        return cut_entries(conn, session=like[0], limit=limit) if like else []
    except sqlite3.OperationalError as e:
        if "no such table" in str(e):
            return []
        raise CliError(f"cannot read the surgery log: {e}") from None
    finally:
        conn.close()


def _log(args: argparse.Namespace) -> int:
    from scalpel_desktop.paths import home_relative
    from scalpel_desktop.store.spill import SpillStore

    if args.limit < 1:
        raise CliError("--limit must be at least 1")
    recs = _records(args.session, args.limit)
    spill = SpillStore()
    rows = []
    for r in recs:
        path = spill.path(r.original_sha256)
        rows.append({
            "created_at": r.created_at,
            "session": r.session,
            "agent": r.agent,
            "tool_use_id": r.tool_use_id,
            "kind": r.kind,
            "tokens": r.tokens,
            "original_sha256": r.original_sha256,
            "spill_path": home_relative(path),
            "spill_exists": path.is_file(),
        })
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    if not rows:
        print("No cuts recorded" + (f" for session {args.session}." if args.session else " yet."))
        return 0
    print(f"{'WHEN':<19}  {'SESSION':<8}  {'KIND':<15}  {'TOKENS':>8}  SPILL")
    for r in rows:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r["created_at"]))
        spill_note = r["spill_path"] if r["spill_exists"] else r["spill_path"] + " (removed)"
        print(f"{when:<19}  {(r['session'] or '-')[:8]:<8}  {r['kind']:<15}  {r['tokens']:>8,}  {spill_note}")
    total = sum(r["tokens"] for r in rows)
    print(f"{len(rows)} cuts, ~{total:,} tokens removed. Read an original with: scalpel spill show HASH")
    return 0
