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
    from scalpel_desktop.store.ledger_queries import cut_decisions, cut_entries, cut_sessions, open_readonly

    try:
        conn = open_readonly()
    except sqlite3.Error as e:
        raise CliError(f"cannot open {dirs().database}: {e}") from None
    if conn is None:
        return [], {}
    try:
        if session is None:
            recs = cut_entries(conn, limit=limit)
        else:
            recs = cut_entries(conn, session=session, limit=limit)
            if not recs:
                like = cut_sessions(conn, session, limit=3)
                if len(like) > 1:
                    raise CliError(f"session prefix {session!r} is ambiguous")
                recs = cut_entries(conn, session=like[0], limit=limit) if like else []
        return recs, cut_decisions(conn, recs)
    except sqlite3.OperationalError as e:
        if "no such table" in str(e):
            return [], {}
        raise CliError(f"cannot read the surgery log: {e}") from None
    finally:
        conn.close()


def _log(args: argparse.Namespace) -> int:
    from scalpel_desktop.paths import home_relative
    from scalpel_desktop.store.spill import SpillStore

    if args.limit < 1:
        raise CliError("--limit must be at least 1")
    recs, decisions = _records(args.session, args.limit)
    spill = SpillStore()
    rows = []
    for r in recs:
        path = spill.path(r.original_sha256)
        reason, figures = decisions.get(r.tool_use_id, ("", None))
        rows.append({
            **_decision(reason, figures),
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
    shown = set()
    for r in rows:  # each decision once: why, where the read stops, what it expects to repay
        key = (r["session"], r["reason"])
        if r["reason"] and key not in shown:
            shown.add(key)
            pay = f", repays {r['payback_x']}x over {r['turns_est']} turns" if r["payback_x"] is not None else ""
            print(f"  {(r['session'] or '-')[:8]}: {r['boundary']} boundary (read stops at message "
                  f"{r['read_stops_at']}){pay} - {r['reason']}")
    return 0


def _decision(reason: str, figures: str | None) -> dict:
    """The decision behind a cut: its reason, its boundary (free, pinned or worst case), its payback."""
    f = {}
    if figures:
        try:
            f = json.loads(figures)
        except ValueError:
            f = {}
    boundary = f.get("boundary") or ("free" if reason.startswith("free") else "")
    return {"reason": reason, "boundary": boundary,
            "read_stops_at": f.get("read_stops_at", f.get("break")), "break": f.get("break"),
            "break_reason": f.get("break_reason"), "rewrite_tokens": f.get("rewrite_tokens"),
            "payback_x": f.get("payback_x"), "turns_est": f.get("turns_est"),
            "extra_usd": f.get("extra_usd"), "payback_usd": f.get("payback_usd")}
