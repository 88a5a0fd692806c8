"""``scalpel profile [SESSION_ID | FILE]``: where do one session's tokens go?"""

from __future__ import annotations

import argparse
import json

from scalpel_desktop.errors import CliError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "profile",
        help="Show where one session's tokens go (default: your latest session).",
        description=(
            "Profile one Claude Code session: context size over its requests, tokens by kind (system and tools "
            "prefix, user text, assistant text, thinking, tool results by tool), the largest tool results, and "
            "the dead weight the doom-span rules find, with what each kind cost to keep."
        ),
    )
    p.add_argument("session", nargs="?", help="A session id (or prefix) or a transcript .jsonl file (default: the latest).")
    p.add_argument("--tier", type=int, choices=(1, 2), default=2, help="Doom-span tier for the dead weight (default 2).")
    p.add_argument("--json", action="store_true", help="Machine-readable output.")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from scalpel_desktop.bench.profile import ProfileError, profile_file, resolve
    from scalpel_desktop.paths import home_relative

    try:
        prof = profile_file(resolve(args.session), tier=args.tier)
    except ProfileError as e:
        raise CliError(str(e)) from None
    if args.json:
        print(json.dumps(prof.as_dict(), indent=2))
        return 0
    from scalpel_desktop.textable import say

    say(f"session {prof.session}  {prof.model}  {prof.requests} requests  ({home_relative(prof.path)})")
    ctx = prof.context
    if ctx:
        marks = " ".join(f"{c // 1000}k" for c in ctx[:: max(1, len(ctx) // 12)])
        say(f"context (real prompt tokens): {marks}  (last {ctx[-1]:,}, peak {max(ctx):,})")
    total = sum(prof.by_kind.values()) or 1  # the measured prompt of the last request (bench/profile.py _split)
    scaled = f"; estimates scaled x{prof.estimate_scale:.3f} to fit it" if prof.estimate_scale < 1 else ""
    print(f"\ntokens by kind in the last request ({prof.measured_tokens:,} measured, split by estimate{scaled}):")
    for k, v in prof.by_kind.items():
        print(f"  {k:<36} {v:>9,}  {100 * v / total:5.1f}%")
    print("\ntool results by tool:")
    for k, v in list(prof.by_tool.items())[:12]:
        print(f"  {k:<36} {v:>9,}")
    print("\nlargest tool results:")
    for r in prof.largest:
        print(f"  {r['tool']:<16} {r['tokens']:>8,}  {r['tool_use_id']}")  # ids whole, never cut
    print()
    say(f"dead weight (tier {args.tier}) and what carrying it cost at the cache-read price:")
    if not prof.dead:
        print("  none found")
    for kind, d in prof.dead.items():
        print(f"  {kind:<18} {int(d['results']):>4} results {int(d['tokens']):>9,} tokens  ${d['cost_usd']:.4f}")
    return 0
