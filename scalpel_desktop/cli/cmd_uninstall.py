"""``scalpel uninstall [--yes] [--delete-data]``: undo every change scalpel made outside its own dirs."""

from __future__ import annotations

import argparse
import shutil
import sys

from scalpel_desktop.errors import CliError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "uninstall",
        help="Remove autopilot, hooks and the statusline setting (restoring files).",
        description="Turn autopilot off (Claude Code's setting restored first, then the login service stopped "
        "and removed), remove scalpel's hooks and statusLine from Claude Code's settings.json (restoring the "
        "previous values; the file comes back byte for byte when nothing else changed), then offer to delete "
        "scalpel's data, config and state dirs (ledger, spill files, settings). The package itself is removed "
        "with pip/pipx.",
    )
    p.add_argument("--yes", "-y", action="store_true", help="Do not ask for confirmation.")
    p.add_argument("--delete-data", action="store_true", help="Also delete the data, config and state dirs.")
    p.set_defaults(func=_uninstall)


def _ask(question: str) -> bool:
    if not sys.stdin.isatty():
        return False
    try:
        return input(f"{question} [y/N] ").strip().lower() in ("y", "yes")
    except EOFError:
        return False


def _uninstall(args: argparse.Namespace) -> int:
    from scalpel_desktop.paths import dirs, home_relative
    from scalpel_desktop.service import autopilot, hooks
    from scalpel_desktop.service.autostart import choose_backend
    from scalpel_desktop.service.settings_file import ClaudeSettings, SettingsError

    if not args.yes and not _ask("Remove scalpel's autopilot, hooks and statusLine from Claude Code?"):
        raise CliError("nothing changed (confirm with --yes when not running in a terminal)")
    settings = ClaudeSettings()
    done: list[str] = []
    try:
        if autopilot.read_state() or choose_backend().enabled() or settings.feature_changes(autopilot.FEATURE):
            autopilot.off()
            done.append("autopilot off: ANTHROPIC_BASE_URL restored, login service removed")
        if hooks.uninstall_hooks(settings) or any(hooks.status(settings).installed.values()):
            done.append("hooks removed")
        if hooks.uninstall_statusline(settings):
            done.append("statusLine restored")
        if settings.remove_backup():  # everything restored: the copy of the file as it was is not needed
            done.append(f"removed the backup {home_relative(settings.backup_path)}")
    except (SettingsError, autopilot.AutopilotError) as e:
        raise CliError(f"{e} (uninstall stopped; nothing else was changed)") from None
    for line in done or ["no autopilot, hooks or statusLine were installed"]:
        print(line)
    print(f"Claude Code settings: {home_relative(settings.path)}")
    d = dirs()
    places = [p for p in dict.fromkeys((d.data, d.config, d.state)) if p.exists()]
    if not places:
        return 0
    listing = ", ".join(home_relative(p) for p in places)
    if args.delete_data or (not args.yes and _ask(f"Also delete scalpel's data ({listing})?")):
        for p in places:
            shutil.rmtree(p, ignore_errors=True)
        print(f"deleted {listing}")
    else:
        print(f"kept scalpel's data: {listing} (delete with `scalpel uninstall --yes --delete-data`)")
    return 0
