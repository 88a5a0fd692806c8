"""``scalpel bench [DIR]``: what would scalpel have saved on these sessions?"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from scalpel_desktop.errors import CliError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "bench",
        help="Replay Claude Code transcripts under each policy and price them.",
        description=(
            "Replay Claude Code transcripts (default: your own, under ~/.claude/projects) through the shipped "
            "surgery stage under each policy (off, cold, payback, naive, first-party), bill them with the "
            "project's cache model at list prices, check the model against the real bill, and show the ceiling."
        ),
    )
    p.add_argument("dir", nargs="?", help="A transcripts directory or one .jsonl file (default: your own transcripts).")
    p.add_argument("--json", action="store_true", help="Machine-readable output (deterministic).")
    p.add_argument("--sessions", action="store_true", help="Also show (or include in --json) one row per session.")
    p.add_argument("--html", metavar="FILE", help="Write a self-contained HTML page with a chart to FILE.")
    p.add_argument("--tier", type=int, choices=(1, 2), default=None, help="Doom-span tier (default: the configured tier).")
    p.add_argument("--jobs", type=_jobs, default=None, metavar="N",
                   help="Processes to replay the sessions on (default: one per core, at most 4; "
                        "the same figures whatever N).")
    p.add_argument("--budget", type=_usd, default=0.0, metavar="USD",
                   help="The risk budget your ledger held before these transcripts, in dollars (default: 0, "
                        "a fresh install: warm cuts wait until free ones have saved something).")
    p.set_defaults(func=run)


def _usd(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        v = -1.0
    if not v >= 0 or v == float("inf"):
        raise argparse.ArgumentTypeError(f"--budget takes dollars, 0 or more (got {text!r})")
    return v


def _jobs(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"--jobs takes a whole number of processes, 1 or more (got {text!r})")
    return n


def run(args: argparse.Namespace) -> int:
    from scalpel_desktop.accounting.prices import PriceTable
    from scalpel_desktop.bench.reader import find_sessions
    from scalpel_desktop.bench.replay import replay_corpus
    from scalpel_desktop.bench.report import build_json, render_html, render_tables
    from scalpel_desktop.config import Config, ConfigError
    from scalpel_desktop.paths import claude_projects_dirs, home_relative

    root = Path(args.dir).expanduser() if args.dir else None
    if root is not None and not root.exists():
        raise CliError(f"no such file or directory: {args.dir}")
    if root is None and not claude_projects_dirs():
        raise CliError("no Claude Code transcripts found (looked in $CLAUDE_CONFIG_DIR/projects, ~/.claude/projects, "
                       "~/.config/claude/projects); pass a directory")
    if not find_sessions(root):
        raise CliError(f"no .jsonl transcripts under {args.dir or 'your Claude Code projects dirs'}")
    tier = args.tier
    if tier is None:
        try:
            tier = int(Config.load().get("tier"))
        except (ConfigError, OSError, ValueError):
            tier = 2
    prices = PriceTable.load()
    label = str(root) if root is not None else ", ".join(home_relative(p) for p in claude_projects_dirs())
    from scalpel_desktop.bench.parallel import default_jobs

    jobs = getattr(args, "jobs", None) or default_jobs()
    if args.json:
        res = replay_corpus(root, tier=tier, prices=prices, jobs=jobs, budget_usd=args.budget)
    else:
        res = _with_progress(root, tier, prices, jobs, args.budget)
    doc = build_json(res, label, prices.as_of, sessions=args.sessions or bool(args.html))
    if args.html:
        Path(args.html).write_text(render_html(doc, doc.get("sessions", [])), encoding="utf-8")
    if args.json:
        if not args.sessions:
            doc.pop("sessions", None)
        sys.stdout.write(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
        return 0
    from rich.console import Console

    render_tables(doc, Console(), doc.get("sessions") if args.sessions else None)
    if args.html:
        print(f"wrote {args.html}")
    return 0


def _with_progress(root, tier, prices, jobs=1, budget_usd=0.0):
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from scalpel_desktop.bench.replay import replay_corpus

    console = Console(stderr=True)
    with Progress(TextColumn("replaying"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console, transient=True) as prog:
        task = prog.add_task("replay", total=None)

        def tick(done: int, total: int) -> None:
            prog.update(task, completed=done, total=total)

        return replay_corpus(root, tier=tier, prices=prices, progress=tick, jobs=jobs, budget_usd=budget_usd)
