"""``scalpel report``: requests, tokens by billing tier, cost, cache share, savings."""

from __future__ import annotations

import argparse
import json
from datetime import datetime
from typing import Any

from scalpel_desktop.errors import CliError

DESCRIPTION = """\
Summarize the ledger: requests, tokens by billing tier (input, cache write 5m,
cache write 1h, cache read, output) from the provider's usage counts, their
cost at the dated per-model price table, the cache share (cache read / prompt),
the pipeline's decisions, and savings: realized (measured on requests that were
changed) apart from projected (estimates, with the weight used), and the
cache keeper's keep-alive pings (their cost) and the re-writes they avoided.

  scalpel report                       everything so far
  scalpel report --since 7d --by day   the last week, one row per day
  scalpel report --since 2026-11-01 --by model --json
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="Tokens, cost and savings from the ledger.", description=DESCRIPTION,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--since", metavar="WHEN",
                   help="Only requests since WHEN: a date (2026-11-01), date and time, or a span back (24h, 7d, 2w).")
    p.add_argument("--by", choices=("day", "session", "model"), help="One row per day, session or model.")
    p.add_argument("--json", action="store_true", help="Machine-readable output (figures unrounded).")
    p.add_argument("--db", metavar="PATH", help="Ledger database to read (default: the data dir's ledger).")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    import sqlite3
    from pathlib import Path

    from scalpel_desktop.accounting.prices import PriceTable
    from scalpel_desktop.accounting.report import ReportError, build_report, parse_since
    from scalpel_desktop.paths import dirs, home_relative
    from scalpel_desktop.store.budget_ledger import budget_summary
    from scalpel_desktop.store.ledger_queries import has_requests, open_readonly
    from scalpel_desktop.store.keeper_ledger import keeper_summary
    from scalpel_desktop.store.misses import miss_totals, misses_since

    path = Path(args.db) if args.db else dirs().database
    try:
        since = parse_since(args.since)
    except ReportError as e:
        raise CliError(str(e)) from None
    try:
        conn = open_readonly(path)
        if conn is None:
            return _empty(args, f"no ledger yet at {home_relative(path)}: "
                                "run the proxy (scalpel start) and send requests through it")
        try:
            if not has_requests(conn):
                return _empty(args, f"{home_relative(path)} holds no ledger table yet: run the proxy (scalpel start) first")
            rep = build_report(conn, since=since, by=args.by, prices=PriceTable.load())
            rep["risk_budget"] = budget_summary(conn, since)
            rep["misses"] = miss_totals(misses_since(conn, since or 0.0))
            rep["keeper"] = keeper_summary(conn, since)  # the cache keeper's pings and the re-writes avoided
        finally:
            conn.close()
    except sqlite3.Error as e:
        raise CliError(f"cannot read the ledger {home_relative(path)}: {e}") from None
    rep["database"] = home_relative(path)
    if args.json:
        print(json.dumps(rep, indent=2))
        return 0
    if rep["total"]["requests"] == 0:
        when = f" since {_when(since)}" if since is not None else ""
        side = sum((rep["total"].get("side_calls") or {}).values())
        if side:
            print(f"The ledger has no requests{when} ({rep['database']}), only {side:,} count_tokens calls.")
        else:
            print(f"The ledger is empty{when} ({rep['database']}).")
        return 0
    _print_rich(rep)
    return 0


def _empty(args: argparse.Namespace, message: str) -> int:
    if args.json:
        print(json.dumps({"total": {"requests": 0}, "groups": [], "message": message}, indent=2))
    else:
        print(message[0].upper() + message[1:] + ".")
    return 0


def _when(ts: float | None) -> str:
    return datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M") if ts is not None else "-"


def _share(x: float | None) -> str:
    return "-" if x is None else f"{x * 100:.1f}%"


def _bound(d: dict[str, Any]) -> str:
    """The error bound of realized dollars (``?`` when some have none)."""
    from scalpel_desktop.textable import usd

    if not d["tokens"] and not d["usd"]:
        return "-"
    return "?" if d.get("unbounded_usd") else usd(d.get("error_usd", 0.0))


def _print_rich(rep: dict[str, Any]) -> None:
    """The report as a plain table that fits the terminal (lower-priority columns drop first;
    ids and figures are never cut) and is full width when piped (``scalpel_desktop/textable.py``)."""
    from scalpel_desktop.textable import RULE, Col, print_table, say, usd
    from scalpel_desktop.textable import tokens_short as tok

    total = rep["total"]
    title = f"scalpel report: {total['requests']:,} requests"
    if rep["since"] is not None:
        title += f" since {_when(rep['since'])}"
    print(title)
    first = {"day": "day", "session": "session", "model": "model", None: ""}[rep["by"]]
    # A session id (36 characters) would leave the figures half of an 80-column line: on a terminal
    # too narrow for the whole table it stands on its own line above its figures (textable ``alone``).
    cols = [Col(first or " ", alone=rep["by"] == "session"), Col("reqs", True), Col("input", True, 4), Col("wr 5m", True, 4),
            Col("wr 1h", True, 6), Col("c.read", True, 3), Col("output", True, 3), Col("cost", True),
            Col("cache%", True, 2), Col("saved", True, 1), Col("saved $", True), Col("±$", True, 2),
            Col("proj.", True, 5), Col("proj. $", True, 5)]

    def row(label: str, g: dict[str, Any]) -> list[str]:
        t, r, p = g["tokens"], g["realized"], g["projected"]
        return [label, f"{g['requests']:,}", tok(t["input"]), tok(t["write_5m"]), tok(t["write_1h"]),
                tok(t["cache_read"]), tok(t["output"]), usd(g["cost_usd"]), _share(g["cache_share"]),
                tok(r["tokens"]) if r["tokens"] else "-", usd(r["usd"]) if r["tokens"] or r["usd"] else "-",
                _bound(r), tok(p["tokens"]) if p["tokens"] else "-",
                usd(p["usd"]) if p["tokens"] or p["usd"] else "-"]

    rows: list = [row(str(g["key"]), g) for g in rep["groups"]]
    if rows:
        rows.append(RULE)
    rows.append(row("total", total))
    print_table(cols, rows)
    side = total.get("side_calls") or {}
    if side:  # never in the requests above: Claude Code's /cost counts only the requests
        say("not requests, in no figure above: " + ", ".join(f"{n:,} {endpoint} calls" for endpoint, n in side.items())
            + (" (Claude Code asking how many tokens a prompt holds; free)" if "count_tokens" in side else ""))
    decisions = ", ".join(f"{k} {v:,}" for k, v in total["decisions"].items())
    say(f"decisions: {decisions}" + (f"; errors: {total['errors']:,}" if total["errors"] else ""))
    line = f"requests with usage counts: {total['with_usage']:,} of {total['requests']:,}"
    if total["body_bytes"]:
        line += f"; request bytes received {total['body_bytes']:,}, sent upstream {total['sent_bytes']:,}"
    say(line)
    say(f"prices as of {rep['prices']['as_of']} ({rep['prices']['source']})")
    for w in rep["prices"]["warnings"]:
        say(f"warning: {w}")
    for model, label in rep["assumed_prices"].items():
        say(f"assumed: {model or '(no model)'} priced as {label}")
    real = total["realized"]
    if real["tokens"] or real["usd"]:
        sources = ", ".join(f"{_SOURCES.get(k, k)} {v:,}" for k, v in real["sources"].items())
        say(f"realized: tier from each request's usage counts; tokens = bytes removed x the conversation's "
            f"tokens per byte measured from its usage ({sources} requests); error bound "
            f"±{usd(real['error_usd'])}" + (f", plus {usd(real['unbounded_usd'])} with no bound "
                                             "(own request's ratio)" if real["unbounded_usd"] else ""))
    bud = rep.get("risk_budget")
    if bud and (bud["saved_usd"] or bud["staked_usd"]):
        line = (f"risk budget (the warm cuts' bets, whole ledger): saved {usd(bud['saved_usd'])}, staked "
                f"{usd(bud['staked_usd'])}, left {usd(bud['balance_usd'])}")
        if bud["bets"]:
            line += (f"; {bud['bets']:,} bet{'s' if bud['bets'] != 1 else ''} here, lost {usd(bud['bets_lost_usd'])} on those that did not pay, "
                     f"earned on {bud['turns_earned']:,} of {bud['turns_estimated']:,} requests estimated"
                     + (f", {bud['bets_open']:,} still earning" if bud["bets_open"] else ""))
        say(line)
    keep = rep.get("keeper")
    if keep and (keep["pings"] or keep["kept"]):  # (ledger rows of their own: in no figure above)
        say(f"cache keeper: {keep['pings']:,} keep-alive ping{'s' if keep['pings'] != 1 else ''} cost "
            f"{usd(keep['ping_cost_usd'])} (staked from the risk budget); {keep['kept']:,} re-write"
            f"{'s' if keep['kept'] != 1 else ''} avoided saved {usd(keep['saved_usd'])} (net of free cuts forgone; "
            f"banked), net {usd(keep['net_usd'])}")
    miss = rep.get("misses")
    if miss and miss["count"]:
        causes = ", ".join(f"{c} {v['count']:,} ({usd(v['cost_usd'])})" for c, v in miss["by_cause"].items())
        say(f"cache misses: {miss['count']:,} re-wrote {miss['tokens_rewritten']:,} tokens, "
            f"{usd(miss['cost_usd'])} beyond a read ({causes}); `scalpel misses` lists them")
    say(f"changed {total['projected']['changed_requests']:,} of {total['requests']:,} requests "
        "(sent bytes differ from received; see decisions)")
    say("tokens: k = thousand, M = million; wr = cache write (5 min, 1 h); c.read = cache read; "
        "saved = realized (measured on requests that were changed), ±$ its error bound (? = none); "
        f"proj. = projected (a projection, not measured), estimated tokens removed, {rep['projected_weight']}")


_SOURCES = {"fit": "fitted on its own", "pooled": "pooled from other conversations", "own_request": "own request",
            "estimate": "estimated"}
