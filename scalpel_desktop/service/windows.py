"""Windows: two Task Scheduler logon tasks (proxy and tray), registered from XML.

The XML files are kept under ``dirs().config / "tasks"`` (UTF-16, as schtasks
expects); Task Scheduler has no per-task environment, so a ``SCALPEL_HOME``
set at install time is not carried over on Windows (use the default dirs).
"""

from __future__ import annotations

import getpass
import os
from pathlib import Path

from scalpel_desktop.paths import dirs
from scalpel_desktop.service.base import Outcome, ServiceBackend, ServiceResult
from scalpel_desktop.service.templates import TASK_NAME, python_launch, render_windows_task

PROXY_TASK = TASK_NAME
TRAY_TASK = TASK_NAME + "-tray"


def _user_id() -> str:
    domain = os.environ.get("USERDOMAIN")
    user = getpass.getuser()
    return f"{domain}\\{user}" if domain else user


class WindowsBackend(ServiceBackend):
    name = "windows-task"

    def _xml(self, task: str) -> Path:
        return dirs().config / "tasks" / f"{task}.xml"

    def files(self) -> dict[Path, bytes]:
        uid = _user_id()
        proxy = render_windows_task(PROXY_TASK, "scalpel-desktop proxy at logon", python_launch("start", windowless=True), uid,
                                    always_restart=True)
        tray = render_windows_task(TRAY_TASK, "scalpel-desktop tray at logon", python_launch("tray", windowless=True), uid)
        return {self._xml(PROXY_TASK): proxy.encode("utf-16"), self._xml(TRAY_TASK): tray.encode("utf-16")}

    def enable(self) -> Outcome:
        self._write_files()
        for task in (PROXY_TASK, TRAY_TASK):
            ok, msg = self._call(["schtasks", "/Create", "/F", "/TN", task, "/XML", str(self._xml(task))])
            if not ok:
                return Outcome(ServiceResult.FAILED, f"schtasks /Create {task} failed: {msg or 'no message'}")
        return self.start()

    def start(self) -> Outcome:
        ok, msg = self._call(["schtasks", "/Run", "/TN", PROXY_TASK])
        return Outcome(ServiceResult.ENABLED if ok else ServiceResult.FAILED, msg)

    def disable(self) -> Outcome:
        if not any(p.exists() for p in self.files()):
            return Outcome(ServiceResult.NOT_INSTALLED)
        for task in (PROXY_TASK, TRAY_TASK):
            self._call(["schtasks", "/End", "/TN", task])
            self._call(["schtasks", "/Delete", "/F", "/TN", task])
        self._remove_files()
        return Outcome(ServiceResult.DISABLED)
