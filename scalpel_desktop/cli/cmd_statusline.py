"""``scalpel statusline``: the line for Claude Code's ``statusLine`` setting."""

from __future__ import annotations

import argparse

from scalpel_desktop.errors import CliError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "statusline",
        help="Print Claude Code's status line (or install it).",
        description=(
            "Read the session JSON Claude Code passes on stdin and print one short line: context size "
            "(and share of the window), cache share of the last request, tokens and dollars scalpel saved in "
            "this session; \"scalpel down\" and what to run when nothing answers on scalpel's port (with "
            "autopilot on, it starts the proxy again). Never fails loudly. --install / --uninstall set or "
            "restore the statusLine setting in Claude Code's settings.json (with a refreshInterval, so it also runs "
            "while a session idles; atomic, backed up, previous value restored)."
        ),
    )
    g = p.add_mutually_exclusive_group()
    g.add_argument("--install", action="store_true", help="Point Claude Code's statusLine setting at scalpel.")
    g.add_argument("--uninstall", action="store_true", help="Restore the previous statusLine setting.")
    p.set_defaults(func=_statusline)


def _statusline(args: argparse.Namespace) -> int:
    if not (args.install or args.uninstall):
        from scalpel_desktop.hooks_entry import main

        return main(["statusline"])
    from scalpel_desktop.service import hooks
    from scalpel_desktop.service.settings_file import SettingsError

    try:
        if args.install:
            hooks.install_statusline()
            changed = True
        else:
            changed = hooks.uninstall_statusline()
    except SettingsError as e:
        raise CliError(str(e)) from None
    st = hooks.status()
    if args.install or changed:
        print(f"statusLine {'set to scalpel' if st.statusline else 'restored'} in {st.settings_file}")
    else:
        print(f"scalpel's statusLine is not set in {st.settings_file}; nothing changed")
    return 0
