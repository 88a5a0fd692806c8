"""The ``scalpel`` command.

Each command group is a module ``cli/cmd_<name>.py`` exposing
``register(subparsers)``, which adds its parser(s) and sets ``func`` (taking the
parsed args, returning an exit status). Modules are discovered, so adding a
command never edits another's file. Heavy imports happen inside ``func``.

``scalpel`` with no command starts the tray where a display exists, else the
proxy in the foreground.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

from scalpel_desktop import __version__
from scalpel_desktop.errors import CliError, CommandError, ScalpelError

__all__ = ["CliError", "build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="scalpel",
        description="Cut provably dead tool output from AI-agent requests, only when the prompt cache makes it free.",
    )
    parser.add_argument("--version", action="version", version=f"scalpel-desktop {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    pkg = sys.modules[__name__]
    for m in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda m: m.name):
        if m.name.startswith("cmd_"):
            importlib.import_module(f"{__name__}.{m.name}").register(sub)
    from scalpel_desktop.cli.help_groups import group_commands

    group_commands(parser, sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    func = getattr(args, "func", None)
    if func is None:
        from scalpel_desktop.cli.default import run_default

        func = run_default
    try:
        return int(func(args) or 0)
    except ScalpelError as e:  # the one place errors are rendered: ``title: message``
        print(e.render(), file=sys.stderr)
        return e.status if isinstance(e, CommandError) else 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # output piped into `head` and closed early
        return 0
