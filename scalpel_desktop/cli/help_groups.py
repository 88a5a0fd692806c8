"""``scalpel --help`` lists the commands in four groups: run, control, inspect, set up.

argparse lists subcommands in one flat block in registration order; after
every ``cmd_*`` module has registered, this writes them into the epilog,
grouped and in reading order, and leaves the flat block out. A command missing from ``GROUPS`` still
shows, under "other", and tests/cli/test_help_groups.py fails on it.
"""

from __future__ import annotations

import argparse
import textwrap

GROUPS: dict[str, tuple[str, ...]] = {
    "run": ("tray", "start", "tui", "emulator", "mcp"),
    "control": ("status", "pause", "resume", "stop", "tier", "policy", "tools"),
    "inspect": ("report", "misses", "log", "spill", "profile", "bench", "accuracy", "doctor"),
    "set up": ("autopilot", "hooks", "statusline", "config", "uninstall"),
}


def group_commands(parser: argparse.ArgumentParser, sub: argparse._SubParsersAction, width: int = 100) -> None:
    """Replace the flat list of ``sub``'s commands in ``parser``'s help with the grouped one."""
    helps = {a.dest: (a.help or "") for a in sub._choices_actions}
    placed = {name for names in GROUPS.values() for name in names}
    groups = dict(GROUPS)
    other = tuple(name for name in helps if name not in placed)
    if other:
        groups["other"] = other
    pad = max(len(n) for n in helps) + 2
    lines = []
    for title, names in groups.items():
        shown = [n for n in names if n in helps]
        if not shown:
            continue
        lines.append(f"{title}:")
        for name in shown:
            wrapped = textwrap.wrap(helps[name], width=max(40, width - pad - 4)) or [""]
            lines.append(f"  {name:<{pad}}{wrapped[0]}")
            lines.extend(f"  {'':<{pad}}{more}" for more in wrapped[1:])
        lines.append("")
    lines.append("`scalpel` alone: the tray where one can be shown, else the proxy in the foreground.")
    lines.append("`scalpel COMMAND --help` explains each command.")
    parser.epilog = "\n".join(lines)
    parser.formatter_class = _GroupedFormatter


class _GroupedFormatter(argparse.RawDescriptionHelpFormatter):
    """Leaves the flat command list out of the argument sections (the epilog has it, grouped)."""

    def add_arguments(self, actions):
        super().add_arguments([a for a in actions if not isinstance(a, argparse._SubParsersAction)])
