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
                    "the tool and the file it worked on, the reason, its estimated size and the hash of the spill "
                    "file holding the original (a unique prefix: print it with `scalpel spill show HASH`).",
    )
    p.add_argument("session", nargs="?", metavar="SESSION",
                   help="Only this session id (or a unique prefix); an unknown one is an error.")
    p.add_argument("--limit", type=int, default=50, metavar="N", help="At most N cuts (default 50).")
    p.add_argument("--json", action="store_true", help="Machine-readable output.")
    p.set_defaults(func=_log)


def _records(session: str | None, limit: int):
    """(session id the prefix named or None, its cuts, every session id in the ledger)."""
    import sqlite3

    from scalpel_desktop.paths import dirs
    from scalpel_desktop.store.ledger_queries import cut_entries, match_sessions, open_readonly

    try:
        conn = open_readonly()
    except sqlite3.Error as e:
        raise CliError(f"cannot open {dirs().database}: {e}") from None
    if conn is None:
        if session is not None:
            raise CliError(_unknown(session))
        return None, [], [], {}
    try:
        if session is None:
            recs = cut_entries(conn, limit=limit)
            return None, recs, match_sessions(conn, "", limit=100_000), _with_bets(conn, recs)
        like = match_sessions(conn, session, limit=3)
        if session in like:
            like = [session]
        if not like:
            raise CliError(_unknown(session))
        if len(like) > 1:
            raise CliError(f"session prefix {session!r} is ambiguous: {', '.join(like[:2])}, ...; "
                           "give more characters")
        recs = cut_entries(conn, session=like[0], limit=limit)
        return like[0], recs, like, _with_bets(conn, recs)
    except sqlite3.OperationalError as e:
        if "no such table" in str(e):
            if session is not None:
                raise CliError(_unknown(session)) from None
            return None, [], [], {}
        raise CliError(f"cannot read the surgery log: {e}") from None
    finally:
        conn.close()


def _with_bets(conn, recs) -> dict:
    """Each cut's decision (reason, figures), a warm one's with how its bet did as a third item: the
    later requests it really earned on against those estimated (``store/budget_ledger.bets``)."""
    from scalpel_desktop.store.budget_ledger import bets
    from scalpel_desktop.store.ledger_queries import cut_decisions

    got = cut_decisions(conn, recs)
    if not any("extra_usd" in (f or "") for _, f in got.values()):
        return got
    made = bets(conn)
    out = {}
    for r in recs:
        reason, figures = got.get(r.tool_use_id, ("", None))
        mine = [b for b in made if b.session == r.session and b.agent == (r.agent or "") and b.ts <= r.created_at]
        out[r.tool_use_id] = (reason, figures, mine[-1] if mine and "extra_usd" in (figures or "") else None)
    return out


def _unknown(session: str) -> str:
    return (f"no session {session!r} in the ledger (neither a full id nor the prefix of one); "
            "list sessions with `scalpel report --by session` or `scalpel log` (every session's cuts)")


def _log(args: argparse.Namespace) -> int:
    from scalpel_desktop.paths import home_relative
    from scalpel_desktop.store.spill import SpillStore
    from scalpel_desktop.textable import Col, print_table, say, unique_prefixes

    if args.limit < 1:
        raise CliError("--limit must be at least 1")
    session, recs, sessions, decisions = _records(args.session, args.limit)
    spill = SpillStore()
    rows = []
    for r in recs:
        path = spill.path(r.original_sha256)
        reason, figures, *bet = decisions.get(r.tool_use_id, ("", None))
        bet = bet[0] if bet else None
        rows.append({
            **_decision(reason, figures),
            "turns_earned": bet.turns if bet is not None else None,
            "bet_closed": bet.closed if bet is not None else None,
            "created_at": r.created_at,
            "session": r.session,
            "agent": r.agent,
            "tool_use_id": r.tool_use_id,
            "tool": r.tool,
            "file": r.target,
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
        print(f"No cuts recorded for session {session}." if session else "No cuts recorded yet.")
        return 0
    hashes = unique_prefixes([r["original_sha256"] for r in rows],
                             [e.sha for e in spill.ls()] + [r["original_sha256"] for r in rows], min_len=10)
    ids = unique_prefixes([r["session"] for r in rows if r["session"]], sessions, min_len=8)
    if session:
        print(f"session {session}")
    cols = [Col("when"), Col("session", drop=1), Col("tool"), Col("why", drop=2), Col("tokens", right=True),
            Col("spill hash"), Col("file", wrap=True)]
    table = []
    for r in rows:
        when = time.strftime("%m-%d %H:%M", time.localtime(r["created_at"]))
        table.append([when, ids.get(r["session"], "-"), r["tool"] or "?", r["kind"], f"{r['tokens']:,}",
                      hashes[r["original_sha256"]] + ("" if r["spill_exists"] else " (gone)"), r["file"] or "-"])
    if session:
        cols.pop(1)
        for t in table:
            t.pop(1)
    print_table(cols, table)
    total = sum(r["tokens"] for r in rows)
    say(f"{len(rows)} cuts, ~{total:,} tokens removed. Read an original with: scalpel spill show HASH "
        f"(spill files in {home_relative(spill.dir)})")
    shown = set()
    for r in rows:  # each decision once: why, where the read stops, what it expects to repay
        key = (r["session"], r["reason"])
        if r["reason"] and key not in shown:
            shown.add(key)
            pay = f", repays {r['payback_x']}x over {r['turns_est']} turns" if r["payback_x"] is not None else ""
            if r["turns_earned"] is not None:  # how the bet did: realized against estimated
                pay += (f" (earned on {r['turns_earned']} of them" + ("" if r["bet_closed"] else " so far") + ")")
            stops = "nothing surely read" if r["read_stops_at"] == -1 else \
                f"read stops at message {r['read_stops_at']}"
            say(f"  {ids.get(r['session'], '-')}: {r['boundary']} boundary ({stops}){pay} - {r['reason']}")
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
