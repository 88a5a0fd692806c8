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
        "settings pointing at it (and parsing), what the running proxy reports off or failing (ledger, recording, "
        "surgery, tool filter, spill, order waits), login service, hooks, statusline, versions, tray support. "
        "Exit status 1 when any check fails. Changes nothing.",
    )
    p.add_argument("--json", action="store_true", help="Machine-readable output (a list of checks).")
    p.set_defaults(func=_doctor)


def _doctor(args: argparse.Namespace) -> int:
    from scalpel_desktop.cli.degraded import hanging
    from scalpel_desktop.cli.doctor_checks import check_all
    from scalpel_desktop.textable import terminal_width

    checks = check_all()
    failed = [c for c in checks if c.status == "fail"]
    warned = [c for c in checks if c.status == "warn"]
    if args.json:
        print(json.dumps({"ok": not failed, "checks": [c.as_dict() for c in checks]}, indent=2))
        return 1 if failed else 0
    width = max(len(c.name) for c in checks)
    columns = terminal_width()  # None when piped: one line per check, whole
    last_fix = None
    for c in checks:
        for line in hanging(f"[{MARKS.get(c.status, c.status)}] {c.name:<{width}}  ", c.detail, columns):
            print(line)
        if c.fix and c.status in ("warn", "fail") and c.fix != last_fix:  # one cause, one fix: said once
            for line in hanging(f"       {'':<{width}}  fix: ", c.fix, columns):
                print(line)
        last_fix = c.fix
    print("\n" + _verdict(failed, warned))
    return 1 if failed else 0


def _verdict(failed: list, warned: list) -> str:
    """The last line: never "All good." while a check failed or warned."""
    if failed:
        return f"{len(failed)} check(s) failed: {', '.join(c.name for c in failed)}; see 'fix:' above."
    if warned:
        return f"No failures; {len(warned)} warning(s): {', '.join(c.name for c in warned)}; see 'fix:' above."
    return "All good."
