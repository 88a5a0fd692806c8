"""``scalpel tui``: the Textual dashboard (sessions, savings, decisions, tools, settings, usage, misses)."""

from __future__ import annotations

import argparse
import os
import sys

from scalpel_desktop.errors import CliError

DESCRIPTION = (
    "Open the dashboard in this terminal: live sessions (context size and its share of the model's window, "
    "cache share, turns, last decision), realized savings today / 7 days / 30 days with a chart, the decisions "
    "log (every cut, why, its size and spill file), the tool inventory with suggestions and a remove/restore "
    "toggle per name, the settings (pause, tier, policy), usage and cost per day, month and 5-hour block, and "
    "the cache misses by cause and by session (p: today / 7 days / 30 days). It reads the ledger and, while "
    "the proxy runs, refreshes live; toggles act through the running proxy and are disabled (with the reason) "
    "when none runs. Keys: 1-7 switch tabs, r refreshes, q quits."
)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("tui", help="Open the dashboard (Textual) in this terminal.", description=DESCRIPTION)
    p.add_argument("--db", metavar="PATH", help="Read this ledger file instead of the user's.")
    p.add_argument("--refresh", type=float, default=2.0, metavar="SECONDS",
                   help="How often to re-read the ledger while the proxy runs (default 2).")
    p.set_defaults(func=_tui)


def interactive() -> bool:
    """A terminal on both ends (Textual needs to read keys and draw)."""
    try:
        return sys.stdin.isatty() and sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


def _tui(args: argparse.Namespace) -> int:
    if not interactive():
        raise CliError(
            "the dashboard needs an interactive terminal (stdin and stdout must be a TTY); "
            "run `scalpel tui` in a terminal window, or use `scalpel report` / `scalpel status --json` in scripts"
        )
    if os.environ.get("TERM") == "dumb":
        raise CliError("the dashboard cannot draw on TERM=dumb; run it in a real terminal emulator")
    if args.refresh <= 0:
        raise CliError(f"--refresh {args.refresh}: must be a number of seconds > 0")
    from scalpel_desktop.tui.app import make_app

    make_app(db_path=args.db, refresh_s=args.refresh).run()
    return 0
