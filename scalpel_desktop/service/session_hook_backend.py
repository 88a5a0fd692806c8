"""Autopilot with no service manager (containers, WSL without systemd): Claude Code's hooks start the proxy.

``scalpel autopilot on --session-hook`` picks this backend where systemd has no
user bus. Nothing is registered with the OS: ``enable`` installs scalpel's
Claude Code hooks (if they are not already), writes a marker, and starts
``scalpel start`` as a detached process; from then on the hooks are the only
watchdog there is: every Claude Code session's SessionStart hook, and every
prompt's UserPromptSubmit hook (service/session_guard.py), start it again
when nothing answers and wait until it does, before the requests they
precede; the statusline command starts it without waiting
(service/revival.py). A proxy killed mid-session is back by the session's
next prompt (the hook says so if it cannot bring it back).

``disable`` stops the proxy through its control API, removes the hooks it
installed, and deletes the marker. The backend is found again through
autopilot's state file (``backend: "session-hook"``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from scalpel_desktop.paths import dirs
from scalpel_desktop.service.base import Outcome, ServiceBackend, ServiceResult

NAME = "session-hook"


class SessionHookBackend(ServiceBackend):
    name = NAME

    @property
    def marker(self) -> Path:
        return dirs().state / "session-hook-service.json"

    def files(self) -> dict[Path, bytes]:
        return {self.marker: b"{}"}

    def describe(self) -> str:
        return "Claude Code's hooks start the proxy when a session begins or a prompt is sent and nothing answers"

    def _read(self) -> dict:
        try:
            doc = json.loads(self.marker.read_text(encoding="utf-8"))
            return doc if isinstance(doc, dict) else {}
        except (OSError, ValueError):
            return {}

    def enable(self) -> Outcome:
        from scalpel_desktop.atomicfile import write_atomic
        from scalpel_desktop.service import hooks

        try:
            installed_hooks = not hooks.status().all_installed
            if installed_hooks:
                hooks.install_hooks()
        except Exception as e:  # noqa: BLE001 - SettingsError: settings.json does not parse
            return Outcome(ServiceResult.FAILED, f"the Claude Code hooks could not be installed: {e}")
        write_atomic(self.marker, json.dumps({"installed_hooks": installed_hooks}).encode(), mode=0o644)
        return self.start()

    def start(self) -> Outcome:
        from scalpel_desktop.control_client import ControlClient, ControlError

        try:
            ControlClient.discover(timeout=1.0).health()
            return Outcome(ServiceResult.ENABLED)
        except ControlError:
            pass
        argv = [sys.executable, "-m", "scalpel_desktop", "start", "--quiet"]
        if getattr(sys, "frozen", False):
            argv = [sys.executable, "start", "--quiet"]
        dirs().logs.mkdir(parents=True, exist_ok=True)
        kwargs: dict = {"start_new_session": True}
        if sys.platform == "win32":
            kwargs = {"creationflags": getattr(subprocess, "DETACHED_PROCESS", 0) | getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0)}
        with open(dirs().logs / "session-hook-proxy.log", "ab") as log:
            try:
                self._started = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                                 **kwargs)
            except OSError as e:
                return Outcome(ServiceResult.FAILED, f"cannot start {argv[0]}: {e}")
        return Outcome(ServiceResult.ENABLED)

    def still_starting(self) -> bool:
        """False once the proxy this process started has exited with an error (port taken, bad config):
        a hook waiting for it can say so at once rather than at its time limit."""
        proc = getattr(self, "_started", None)
        return proc is None or proc.poll() is None or proc.returncode == 0

    def disable(self) -> Outcome:
        from scalpel_desktop.control_client import ControlClient, ControlError, pid_alive

        if not self.marker.exists():
            return Outcome(ServiceResult.NOT_INSTALLED)
        doc = self._read()
        try:
            client = ControlClient.discover(timeout=2.0)
            pid = client.pid
            client.stop()
            import time

            deadline = time.monotonic() + 10
            while pid and pid_alive(pid) and time.monotonic() < deadline:
                time.sleep(0.05)
        except ControlError:
            pass
        if doc.get("installed_hooks"):
            from scalpel_desktop.service import hooks

            try:
                hooks.uninstall_hooks()
            except Exception:  # noqa: BLE001 - an unparsable settings.json keeps its hooks
                pass
        self.marker.unlink(missing_ok=True)
        return Outcome(ServiceResult.DISABLED)
