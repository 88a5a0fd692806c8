"""Which login-service backend serves this machine (maestral's ``autostart.py`` habit).

The chooser sits above the backends so that ``service/base.py`` (the shared
``ServiceBackend`` type and its result enums) never imports them: each backend
imports the base, and this module imports each backend. Callers that need "the
login service here" (autopilot, the SessionStart hook, doctor, uninstall) ask
``choose_backend()``; nothing else picks a backend.

``SCALPEL_TEST_SERVICE_BACKEND=process`` (tests) selects ``ProcessBackend``,
which starts a real ``scalpel start`` child and never touches a service manager.
Autopilot turned on with ``--session-hook`` (no systemd user bus: containers,
WSL) keeps ``SessionHookBackend``, recorded in autopilot's state.
"""

from __future__ import annotations

import json
import os
import sys

from scalpel_desktop.service.base import Runner, ServiceBackend

TEST_BACKEND_ENV = "SCALPEL_TEST_SERVICE_BACKEND"


def _chosen_at_on() -> str:
    """The backend autopilot was turned on with (``autopilot.json``), e.g. ``session-hook``."""
    from scalpel_desktop.paths import dirs

    try:
        state = json.loads((dirs().state / "autopilot.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ""
    return str(state.get("backend") or "") if isinstance(state, dict) else ""


def choose_backend(runner: Runner | None = None) -> ServiceBackend:
    """The backend for this OS, or the test backend when the test setting is on, or the
    session-hook backend when autopilot was turned on with it (no service manager here)."""
    if os.environ.get(TEST_BACKEND_ENV, "") == "process":
        from scalpel_desktop.service.process_backend import ProcessBackend

        return ProcessBackend()
    from scalpel_desktop.service.session_hook_backend import NAME, SessionHookBackend

    if _chosen_at_on() == NAME:
        return SessionHookBackend(runner)
    if sys.platform == "darwin":
        from scalpel_desktop.service.launchd import LaunchdBackend

        return LaunchdBackend(runner)
    if sys.platform == "win32":
        from scalpel_desktop.service.windows import WindowsBackend

        return WindowsBackend(runner)
    from scalpel_desktop.service.systemd import SystemdBackend

    return SystemdBackend(runner)
