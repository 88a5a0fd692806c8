"""`scalpel --help` groups the commands: run, control, inspect, set up; every command in exactly one."""

from __future__ import annotations

import argparse
import re

from scalpel_desktop.cli import build_parser
from scalpel_desktop.cli.help_groups import GROUPS


def _commands(parser: argparse.ArgumentParser) -> dict[str, str | None]:
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    helps = {a.dest: a.help for a in sub._choices_actions}
    return {name: helps.get(name) for name in sub.choices}


def test_every_listed_command_is_in_exactly_one_group():
    listed = {name for name, help_text in _commands(build_parser()).items() if help_text}
    grouped = [name for names in GROUPS.values() for name in names]
    assert len(grouped) == len(set(grouped)), "a command in two groups"
    assert set(grouped) == listed, f"ungrouped: {listed - set(grouped)}; unknown: {set(grouped) - listed}"


def test_help_shows_the_groups_in_order_and_no_flat_list():
    text = build_parser().format_help()
    titles = re.findall(r"^(\w[\w ]*):$", text, flags=re.M)
    assert titles == ["options", "run", "control", "inspect", "set up"]
    assert "positional arguments" not in text and "other:" not in text
    assert text.index("\n  tray ") < text.index("\n  status ") < text.index("\n  report ") < text.index("\n  autopilot ")
    assert "\n  hook " not in text  # the hidden command stays hidden


def test_a_command_nobody_grouped_still_shows_under_other():
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    sub.add_parser("newthing", help="A command added without a group.")
    from scalpel_desktop.cli.help_groups import group_commands

    group_commands(parser, sub)
    text = parser.format_help()
    assert "other:\n  newthing" in text
