"""``scalpel accuracy [DIR]``: token estimates against the provider's real counts."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from scalpel_desktop.errors import CliError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "accuracy",
        help="Compare token estimates with the usage counts in transcripts.",
        description=(
            "Compare the calibrated token estimator (and a plain characters/4) with the usage counts in "
            "Claude Code transcripts: each sample is the growth of the real prompt between two consecutive "
            "requests against the content the transcript shows was added. Prints the error per model family."
        ),
    )
    p.add_argument("dir", nargs="?", help="A transcripts directory or .jsonl file (default: your own transcripts).")
    p.add_argument("--json", action="store_true", help="Machine-readable output.")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from scalpel_desktop.bench.accuracy import accuracy
    from scalpel_desktop.bench.reader import find_sessions

    root = Path(args.dir).expanduser() if args.dir else None
    if root is not None and not root.exists():
        raise CliError(f"no such file or directory: {args.dir}")
    if not find_sessions(root):
        raise CliError(f"no .jsonl transcripts under {args.dir or 'your Claude Code projects dirs'}")
    scores = accuracy(root)
    if not scores:
        raise CliError("no usable samples (need sequences with at least two requests carrying usage)")
    if args.json:
        print(json.dumps({"scores": [s.as_dict() for s in scores]}, indent=2))
        return 0
    print(f"{'family':<12} {'samples':>7} {'real tokens':>12} {'calibrated err%':>16} {'bias%':>7} "
          f"{'chars/4 err%':>13} {'bias%':>7}")
    for s in scores:
        print(f"{s.family:<12} {s.samples:>7} {s.real_tokens:>12,} {s.calibrated_error_pct:>16.1f} "
              f"{s.calibrated_bias_pct:>+7.1f} {s.chars4_error_pct:>13.1f} {s.chars4_bias_pct:>+7.1f}")
    print("error% = sum |estimate - real| / sum real over prompt growths between consecutive requests")
    return 0
