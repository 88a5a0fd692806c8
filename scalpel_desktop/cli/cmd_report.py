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
changed) apart from projected (estimates, with the weight used).

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
    from scalpel_desktop.store.ledger_queries import has_requests, open_readonly

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


def _tok(n: int) -> str:
    if n >= 1_000_000:
        return f"{n / 1e6:.1f}M"
    if n >= 10_000:
        return f"{n / 1e3:.0f}k"
    return f"{n:,}"


def _usd(x: float) -> str:
    return f"${x:,.2f}" if abs(x) >= 1 else f"${x:.4f}"


def _saved(d: dict[str, Any]) -> str:
    return "-" if not d["tokens"] and not d["usd"] else f"{_tok(d['tokens'])} / {_usd(d['usd'])}"


def _realized(d: dict[str, Any]) -> str:
    """Realized tokens / dollars with the error bound their ratios carry (``±?`` when some have none)."""
    if not d["tokens"] and not d["usd"]:
        return "-"
    bound = "±?" if d.get("unbounded_usd") else f"±{_usd(d.get('error_usd', 0.0))}"
    return f"{_saved(d)} {bound}"


def _share(x: float | None) -> str:
    return "-" if x is None else f"{x * 100:.1f}%"


def _print_rich(rep: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    if not console.is_terminal:
        console = Console(width=max(console.width, 150))  # piped: do not squeeze the table to 80 columns
    total = rep["total"]
    title = f"scalpel report: {total['requests']:,} requests"
    if rep["since"] is not None:
        title += f" since {_when(rep['since'])}"
    table = Table(title=title, title_justify="left")
    first = {"day": "day", "session": "session", "model": "model", None: ""}[rep["by"]]
    table.add_column(first or " ")
    for name in ("requests", "input", "write 5m", "write 1h", "cache read", "output", "cost", "cache share",
                 "realized saved", "projected"):
        table.add_column(name, justify="right")

    def add(label: str, g: dict[str, Any], style: str | None = None) -> None:
        t = g["tokens"]
        table.add_row(
            label, f"{g['requests']:,}", _tok(t["input"]), _tok(t["write_5m"]), _tok(t["write_1h"]),
            _tok(t["cache_read"]), _tok(t["output"]), _usd(g["cost_usd"]), _share(g["cache_share"]),
            _realized(g["realized"]),
            _saved(g["projected"]),
            style=style,
        )

    for g in rep["groups"]:
        key = str(g["key"])
        add(key if len(key) <= 40 else key[:37] + "...", g)
    if rep["groups"]:
        table.add_section()
    add("total", total, style="bold")
    console.print(table)
    decisions = ", ".join(f"{k} {v:,}" for k, v in total["decisions"].items())
    console.print(f"decisions: {decisions}" + (f"; errors: {total['errors']:,}" if total["errors"] else ""))
    line = f"requests with usage counts: {total['with_usage']:,} of {total['requests']:,}"
    if total["body_bytes"]:
        line += f"; request bytes received {total['body_bytes']:,}, sent upstream {total['sent_bytes']:,}"
    console.print(line)
    console.print(f"prices as of {rep['prices']['as_of']} ({rep['prices']['source']})")
    for w in rep["prices"]["warnings"]:
        console.print(f"[yellow]warning:[/] {w}")
    for model, label in rep["assumed_prices"].items():
        console.print(f"[yellow]assumed:[/] {model or '(no model)'} priced as {label}")
    real = total["realized"]
    if real["tokens"] or real["usd"]:
        sources = ", ".join(f"{_SOURCES.get(k, k)} {v:,}" for k, v in real["sources"].items())
        console.print(f"realized: tier from each request's usage counts; tokens = bytes removed x the conversation's "
                      f"tokens per byte measured from its usage ({sources} requests); error bound "
                      f"±{_usd(real['error_usd'])}" + (f", plus {_usd(real['unbounded_usd'])} with no bound "
                                                        "(own request's ratio)" if real["unbounded_usd"] else ""))
    console.print(f"changed {total['projected']['changed_requests']:,} of {total['requests']:,} requests "
                  "(sent bytes differ from received; see decisions)")
    console.print("realized = measured on requests that were changed; projected (a projection, not measured) = "
                  f"estimated tokens removed, {rep['projected_weight']}")


_SOURCES = {"fit": "fitted on its own", "pooled": "pooled from other conversations", "own_request": "own request",
            "estimate": "estimated"}
