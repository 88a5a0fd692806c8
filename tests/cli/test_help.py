"""Every ``scalpel`` command and subcommand, whoever wrote it, has help and a description."""

from __future__ import annotations

import argparse
import subprocess
import sys

from scalpel_desktop.cli import build_parser


def _walk(parser: argparse.ArgumentParser, path: tuple[str, ...]):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help for a in action._choices_actions}
            for name, sub in action.choices.items():
                yield path + (name,), helps.get(name), sub
                yield from _walk(sub, path + (name,))


# Commands left out of `scalpel --help` on purpose (argparse lists a subcommand only when it has
# help=). They still need a description. `hook` is run by Claude Code hooks, not by people
# (cli/cmd_hooks.py says why).
HIDDEN = {("hook",)}


def test_every_command_has_help_and_description():
    commands = list(_walk(build_parser(), ()))
    assert {("start",), ("status",), ("stop",), ("pause",), ("resume",)} <= {c for c, _, _ in commands}
    missing = [
        " ".join(cmd)
        for cmd, help_text, sub in commands
        if (not (help_text or "").strip() and cmd not in HIDDEN) or not (sub.description or "").strip()
    ]
    assert not missing, f"commands without help= or description=: {missing}"


def test_every_command_prints_its_help():
    parser = build_parser()
    for cmd, _, sub in _walk(parser, ()):
        text = sub.format_help()
        assert sub.description.split()[0] in text
        assert "usage: scalpel " + " ".join(cmd) in " ".join(text.split())


def test_top_level_help_runs_as_a_program():
    out = subprocess.run([sys.executable, "-m", "scalpel_desktop", "--help"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0
    assert "start" in out.stdout and "status" in out.stdout
