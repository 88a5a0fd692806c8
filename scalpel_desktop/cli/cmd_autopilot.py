"""``scalpel autopilot on|off|status``: Claude Code routed through scalpel at login."""

from __future__ import annotations

import argparse
import json

from scalpel_desktop.errors import CliError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "autopilot",
        help="Route Claude Code through scalpel at login (on/off/status).",
        description=(
            "on: install the login service, start it, wait for the proxy's health check, then point "
            "Claude Code's settings.json (env.ANTHROPIC_BASE_URL) at it; a previous gateway URL becomes "
            "scalpel's upstream. off: restore the previous setting first, then stop and remove the service."
        ),
    )
    asub = p.add_subparsers(dest="autopilot_cmd", metavar="ACTION", required=True)
    on = asub.add_parser("on", help="Install and start the login service, then point Claude Code at it.",
                         description="Install and start the login service, then point Claude Code at it.")
    on.add_argument("--timeout", type=float, default=30.0, help="Seconds to wait for the health check (default 30).")
    on.add_argument("--session-hook", action="store_true",
                    help="No login service (containers, WSL without systemd): install Claude Code's hooks and let "
                    "the SessionStart hook start the proxy whenever a session begins.")
    on.add_argument("--json", action="store_true", help="Machine-readable output.")
    on.set_defaults(func=_on)
    off = asub.add_parser("off", help="Restore Claude Code's settings, then stop and remove the service.",
                          description="Restore Claude Code's settings, then stop and remove the service.")
    off.add_argument("--json", action="store_true", help="Machine-readable output.")
    off.set_defaults(func=_off)
    st = asub.add_parser("status", help="Show whether autopilot is on and healthy.",
                         description="Show whether autopilot is on, the service installed, the proxy answering, and where Claude Code points.")
    st.add_argument("--json", action="store_true", help="Machine-readable output.")
    st.set_defaults(func=_status)


def _print(st, as_json: bool) -> None:
    if as_json:
        print(json.dumps(st.as_dict(), indent=2))
        return
    print(f"autopilot:        {'on' if st.enabled else 'off'}")
    print(f"login service:    {'installed' if st.service_installed else 'not installed'} ({st.backend})")
    print(f"proxy:            {'answering' if st.proxy_answering else 'not answering'} on 127.0.0.1:{st.port}")
    where = st.settings_base_url or "(not set: Claude Code talks to the API directly)"
    print(f"Claude Code:      ANTHROPIC_BASE_URL = {where}  [{st.settings_file}]")
    print(f"upstream:         {st.upstream}" + ("  (your previous gateway)" if st.gateway else ""))
    for p in st.problems:
        print(f"problem:          {p}")


def _run(fn, args):
    from scalpel_desktop.service.autopilot import AutopilotError
    from scalpel_desktop.service.settings_file import SettingsError

    try:
        st = fn()
    except (AutopilotError, SettingsError) as e:
        raise CliError(str(e)) from None
    _print(st, getattr(args, "json", False))
    return 0


def _on(args: argparse.Namespace) -> int:
    from scalpel_desktop.service import autopilot

    return _run(lambda: autopilot.on(timeout=args.timeout, session_hook=args.session_hook), args)


def _off(args: argparse.Namespace) -> int:
    from scalpel_desktop.service import autopilot

    return _run(autopilot.off, args)


def _status(args: argparse.Namespace) -> int:
    from scalpel_desktop.service import autopilot

    return _run(autopilot.status, args)
