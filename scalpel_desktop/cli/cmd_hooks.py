"""``scalpel hooks install|uninstall|status`` and the hidden ``scalpel hook EVENT``.

The hooks written into Claude Code's settings.json run
``<python> -I -m scalpel_desktop.hooks_entry EVENT`` (import-light, not this
CLI) so they answer fast; ``scalpel hook EVENT`` runs the same code for a
standalone build and for trying a hook by hand:
``echo '{...}' | scalpel hook pre-tool-use``.
"""

from __future__ import annotations

import argparse
import json

from scalpel_desktop.errors import CliError

EVENTS = ("pre-tool-use", "post-tool-use", "session-start", "user-prompt-submit", "statusline")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "hooks",
        help="Install or remove scalpel's Claude Code hooks.",
        description=(
            "Claude Code hooks in settings.json: PreToolUse denies a full re-read of a file already read in "
            "this session and unchanged on disk (allowed with offset/limit, when uncertain, or when the proxy "
            "cut the earlier read); PostToolUse records file hashes per session; SessionStart and "
            "UserPromptSubmit start the proxy again when autopilot is on and nothing answers (one connect when "
            "it runs), and say so in the session when it cannot come back. Edits are atomic, backed up, and "
            "undone exactly."
        ),
    )
    hsub = p.add_subparsers(dest="hooks_cmd", metavar="ACTION", required=True)
    for name, text in (("install", "Add the hooks to Claude Code's settings.json."),
                       ("uninstall", "Remove the hooks, restoring settings.json."),
                       ("status", "Show which hooks are installed.")):
        a = hsub.add_parser(name, help=text, description=text)
        a.add_argument("--json", action="store_true", help="Machine-readable output.")
        a.set_defaults(func=_run, action=name)

    # Hidden from `scalpel --help` on purpose (no help=: argparse lists a subcommand only when it has
    # one, and help=SUPPRESS prints "==SUPPRESS=="); documented in docs/desktop.md and its own --help.
    h = sub.add_parser(
        "hook",
        description="Run one Claude Code hook: reads the hook JSON on stdin, prints the decision (if any). "
        "Always exits 0, silently on any error. Used by standalone builds; see `scalpel hooks`.",
    )
    h.add_argument("event", choices=EVENTS, help="Which hook.")
    h.set_defaults(func=_hook)


def _run(args: argparse.Namespace) -> int:
    from scalpel_desktop.service import hooks
    from scalpel_desktop.service.settings_file import SettingsError

    changed = False
    try:
        if args.action == "install":
            hooks.install_hooks()
        elif args.action == "uninstall":
            changed = hooks.uninstall_hooks()
    except SettingsError as e:
        raise CliError(str(e)) from None
    st = hooks.status()
    if args.json:
        print(json.dumps(st.as_dict(), indent=2))
        return 0
    if args.action == "install":
        print(f"hooks installed in {st.settings_file}")
    elif args.action == "uninstall":
        print(f"hooks removed from {st.settings_file}" if changed
              else f"no scalpel hooks in {st.settings_file}; nothing changed")
    for event, ok in st.installed.items():
        print(f"  {event:<16} {'installed' if ok else 'not installed'}")
    if st.problem:
        print(f"  problem: {st.problem}")
    return 0


def _hook(args: argparse.Namespace) -> int:
    from scalpel_desktop.hooks_entry import main

    return main([args.event])
