"""``scalpel`` with no command: the tray where one can be shown, else the proxy in the foreground.

The tray answers ``NoTrayBackend(reason, hint)`` when this session can show no
tray (no display, no PyGObject, no tray host on stock GNOME); the CLI then
runs ``start`` itself (``serve_foreground``) and, once the proxy is up, says so
in one line: why there is no tray, where the proxy runs, how to get the tray.
The tray never builds the CLI's parser (no tray -> cli import).
"""

from __future__ import annotations

import argparse
import sys

from scalpel_desktop.errors import CliError
from scalpel_desktop.desktop_env.tray_host import NO_DISPLAY_HINT, has_display


def run_default(args: argparse.Namespace) -> int:
    if has_display():
        return tray_or_foreground()
    from scalpel_desktop.tray.app import NoTrayBackend

    return run_headless(NoTrayBackend("no display (DISPLAY/WAYLAND_DISPLAY unset)", NO_DISPLAY_HINT))


def tray_or_foreground() -> int:
    """The tray (``scalpel tray``, and ``scalpel`` with a display), or the proxy headless when none can be shown."""
    from scalpel_desktop.tray.app import NoTrayBackend, TrayStartError, run_tray

    try:
        result = run_tray()
    except TrayStartError as e:
        raise CliError(str(e)) from None
    if isinstance(result, NoTrayBackend):
        return run_headless(result)
    return int(result or 0)


def no_tray_line(no_tray, where: str) -> str:
    hint = f" For the tray: {no_tray.hint}." if no_tray.hint else ""
    return f"scalpel: no tray: {no_tray.reason}. {where}.{hint}"


def run_headless(no_tray) -> int:
    """No tray here: serve in the foreground (unless a proxy already answers), and say so in one line."""
    from scalpel_desktop.cli.cmd_start import serve_foreground
    from scalpel_desktop.control_client import ControlClient, ControlError

    try:
        client = ControlClient.discover(timeout=2.0)
        client.health()
        print(no_tray_line(no_tray, f"A proxy already runs on http://127.0.0.1:{client.port}; nothing to do"),
              file=sys.stderr, flush=True)
        return 0
    except ControlError:
        pass

    def started(rt) -> None:
        where = f"The proxy runs in the foreground on http://127.0.0.1:{rt.port} (Ctrl-C stops it)"
        print(no_tray_line(no_tray, where), file=sys.stderr, flush=True)

    return serve_foreground(on_started=started)
