"""``scalpel tray``: the tray icon (and the proxy, unless one already runs)."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "tray",
        help="Show the tray icon (starts the proxy unless one already runs).",
        description=(
            "Show the tray icon: pause/resume, autopilot, tier, policy, tool filter, dashboard. "
            "It attaches to a running proxy (autopilot's login service, `scalpel start`) or starts its own. "
            "With no display or tray backend it says so and runs the proxy in the foreground. "
            "On Linux the menu needs PyGObject: pip install 'scalpel-desktop[gtk]'."
        ),
    )
    p.set_defaults(func=_tray)


def _tray(args: argparse.Namespace) -> int:
    from scalpel_desktop.cli.default import tray_or_foreground

    return tray_or_foreground()
