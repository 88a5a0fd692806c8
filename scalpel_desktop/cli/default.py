"""``scalpel`` with no command: the tray where one can be shown, else the proxy in the foreground.

The tray answers ``NoTrayBackend(reason)`` when this session can show no tray;
the CLI then says why and runs ``start`` itself (``serve_foreground``), so
the tray never builds the CLI's parser (no tray -> cli import).
"""

from __future__ import annotations

import argparse
import sys

from scalpel_desktop.cli import CliError
from scalpel_desktop.desktop_env.tray_host import has_display


def run_default(args: argparse.Namespace) -> int:
    if has_display():
        return tray_or_foreground()
    from scalpel_desktop.cli.cmd_start import serve_foreground

    return serve_foreground()


def tray_or_foreground() -> int:
    """The tray (``scalpel tray``, and ``scalpel`` with a display), or the proxy headless when none can be shown."""
    from scalpel_desktop.tray.app import NoTrayBackend, TrayStartError, run_tray

    try:
        result = run_tray()
    except TrayStartError as e:
        raise CliError(str(e)) from None
    if isinstance(result, NoTrayBackend):
        return run_headless(result.reason)
    return int(result or 0)


def run_headless(reason: str) -> int:
    """No tray here: say why, then serve in the foreground unless a proxy already answers."""
    from scalpel_desktop.cli.cmd_start import serve_foreground
    from scalpel_desktop.control_client import ControlClient, ControlError

    print(f"scalpel: {reason}; running headless (the proxy in the foreground).", file=sys.stderr)
    try:
        client = ControlClient.discover(timeout=2.0)
        client.health()
        print(f"scalpel: a proxy already runs on 127.0.0.1:{client.port}; nothing to do.", file=sys.stderr)
        return 0
    except ControlError:
        pass
    return serve_foreground()
