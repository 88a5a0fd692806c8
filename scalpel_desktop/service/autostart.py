"""Which login-service backend serves this machine (maestral's ``autostart.py`` habit).

The chooser sits above the backends so that ``service/base.py`` (the shared
``ServiceBackend`` type and its result enums) never imports them: each backend
imports the base, and this module imports each backend. Callers that need "the
login service here" (autopilot, the SessionStart hook, doctor, uninstall) ask
``choose_backend()``; nothing else picks a backend.

``SCALPEL_TEST_SERVICE_BACKEND=process`` (tests) selects ``ProcessBackend``,
which starts a real ``scalpel start`` child and never touches a service manager.
"""

from __future__ import annotations

import os
import sys

from scalpel_desktop.service.base import Runner, ServiceBackend

TEST_BACKEND_ENV = "SCALPEL_TEST_SERVICE_BACKEND"


def choose_backend(runner: Runner | None = None) -> ServiceBackend:
    """The backend for this OS, or the test backend when the test setting is on."""
    if os.environ.get(TEST_BACKEND_ENV, "") == "process":
        from scalpel_desktop.service.process_backend import ProcessBackend

        return ProcessBackend()
    if sys.platform == "darwin":
        from scalpel_desktop.service.launchd import LaunchdBackend

        return LaunchdBackend(runner)
    if sys.platform == "win32":
        from scalpel_desktop.service.windows import WindowsBackend

        return WindowsBackend(runner)
    from scalpel_desktop.service.systemd import SystemdBackend

    return SystemdBackend(runner)
