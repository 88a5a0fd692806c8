"""``scalpel doctor [--json]``: check the setup and say how to fix each problem."""

from __future__ import annotations

import argparse
import json

MARKS = {"ok": "ok  ", "warn": "warn", "fail": "FAIL", "info": "info"}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "doctor",
        help="Check the setup and say how to fix each problem.",
        description="Check everything a user could have wrong: proxy answering, port free, Claude Code's "
        "settings pointing at it (and parsing), login service, hooks, statusline, versions, tray support. "
        "Exit status 1 when any check fails. Changes nothing.",
    )
    p.add_argument("--json", action="store_true", help="Machine-readable output (a list of checks).")
    p.set_defaults(func=_doctor)


def _doctor(args: argparse.Namespace) -> int:
    from scalpel_desktop.cli.doctor_checks import check_all

    checks = check_all()
    failed = any(c.status == "fail" for c in checks)
    if args.json:
        print(json.dumps({"ok": not failed, "checks": [c.as_dict() for c in checks]}, indent=2))
        return 1 if failed else 0
    width = max(len(c.name) for c in checks)
    for c in checks:
        print(f"[{MARKS.get(c.status, c.status)}] {c.name:<{width}}  {c.detail}")
        if c.fix and c.status in ("warn", "fail"):
            print(f"       {'':<{width}}  fix: {c.fix}")
    print("\nAll good." if not failed else "\nSome checks failed; see 'fix:' above.")
    return 1 if failed else 0
