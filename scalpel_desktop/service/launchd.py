"""macOS: two launchd agents, the proxy (KeepAlive: back after any exit) and the tray (at login)."""

from __future__ import annotations

import os
from pathlib import Path

from scalpel_desktop.paths import dirs, user_home
from scalpel_desktop.private_files import touch_private
from scalpel_desktop.service.base import Outcome, ServiceBackend, ServiceResult
from scalpel_desktop.service.templates import LABEL, python_launch, render_launchd_plist

PROXY_LABEL = LABEL + ".proxy"
TRAY_LABEL = LABEL + ".tray"


class LaunchdBackend(ServiceBackend):
    name = "launchd"

    def _plist(self, label: str) -> Path:
        return user_home() / "Library" / "LaunchAgents" / f"{label}.plist"

    def files(self) -> dict[Path, bytes]:
        log = str(dirs().logs / "service.log")
        return {
            self._plist(PROXY_LABEL): render_launchd_plist(PROXY_LABEL, python_launch("start"), log, always_restart=True),
            self._plist(TRAY_LABEL): render_launchd_plist(TRAY_LABEL, python_launch("tray"), log),
        }

    def _domain(self) -> str:
        return f"gui/{os.getuid()}" if hasattr(os, "getuid") else "gui/0"

    def enable(self) -> Outcome:
        touch_private(dirs().logs / "service.log")  # launchd appends to it; created 0600 first
        self._write_files()
        for label in (PROXY_LABEL, TRAY_LABEL):
            self._call(["launchctl", "bootout", f"{self._domain()}/{label}"])
            ok, msg = self._call(["launchctl", "bootstrap", self._domain(), str(self._plist(label))])
            if not ok:
                return Outcome(ServiceResult.FAILED, f"launchctl bootstrap {label} failed: {msg or 'no message'}")
        return Outcome(ServiceResult.ENABLED)

    def start(self) -> Outcome:
        ok, msg = self._call(["launchctl", "kickstart", f"{self._domain()}/{PROXY_LABEL}"])
        return Outcome(ServiceResult.ENABLED if ok else ServiceResult.FAILED, msg)

    def disable(self) -> Outcome:
        if not any(p.exists() for p in self.files()):
            return Outcome(ServiceResult.NOT_INSTALLED)
        for label in (PROXY_LABEL, TRAY_LABEL):
            self._call(["launchctl", "bootout", f"{self._domain()}/{label}"])
        self._remove_files()
        return Outcome(ServiceResult.DISABLED)
