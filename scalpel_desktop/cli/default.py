"""``scalpel`` with no command: the tray where a display exists, else the proxy in the foreground."""

from __future__ import annotations

import argparse
import os
import sys


def has_display() -> bool:
    if sys.platform in ("darwin", "win32"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def run_default(args: argparse.Namespace) -> int:
    from scalpel_desktop.cli import build_parser

    if has_display():
        try:
            from scalpel_desktop.tray.app import run_tray  # type: ignore[attr-defined]
        except ImportError:
            run_tray = None
        if run_tray is not None:
            return int(run_tray() or 0)
    start_args = build_parser().parse_args(["start"])
    return int(start_args.func(start_args) or 0)
