"""TEST backend: a real ``scalpel start`` child process stands in for a login service.

Selected with the documented TEST setting ``SCALPEL_TEST_SERVICE_BACKEND=process``.
It never talks to a service manager: "installing" writes a marker file under
``dirs().state`` and starts ``python -m scalpel_desktop start`` in its own
session; "removing" stops exactly that PID. Extra arguments for the child can be
given in ``SCALPEL_TEST_SERVICE_ARGS`` (space separated), e.g. ``--port 1`` to
make it fail for real.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from scalpel_desktop.control_client import pid_alive
from scalpel_desktop.paths import dirs
from scalpel_desktop.service.base import Outcome, ServiceBackend, ServiceResult


def _alive(pid: int) -> bool:
    """``pid_alive``, after reaping the child if it is ours and has exited (no zombie left behind)."""
    if pid <= 0:
        return False
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass  # not our child: pid_alive tells
    return pid_alive(pid)


class ProcessBackend(ServiceBackend):
    name = "test-process"

    @property
    def marker(self) -> Path:
        return dirs().state / "test-service.json"

    def files(self) -> dict[Path, bytes]:
        return {self.marker: b"{}"}

    def _read(self) -> dict:
        try:
            return json.loads(self.marker.read_text())
        except (OSError, ValueError):
            return {}

    def enabled(self) -> bool:
        return self.marker.exists()

    def pid(self) -> int | None:
        pid = self._read().get("pid")
        return pid if isinstance(pid, int) and _alive(pid) else None

    def enable(self) -> Outcome:
        return self.start()

    def start(self) -> Outcome:
        if self.pid() is not None:
            return Outcome(ServiceResult.ENABLED)
        argv = [sys.executable, "-m", "scalpel_desktop", "start", *os.environ.get("SCALPEL_TEST_SERVICE_ARGS", "").split()]
        dirs().logs.mkdir(parents=True, exist_ok=True)
        log = open(dirs().logs / "test-service.log", "ab")
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        except OSError as e:
            return Outcome(ServiceResult.FAILED, f"cannot start {argv[0]}: {e}")
        finally:
            log.close()
        self.marker.parent.mkdir(parents=True, exist_ok=True)
        self.marker.write_text(json.dumps({"pid": proc.pid, "argv": argv}))
        return Outcome(ServiceResult.ENABLED)

    def stop(self) -> None:
        pid = self.pid()
        if pid is None:
            return
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and _alive(pid):
            time.sleep(0.05)
        if _alive(pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def disable(self) -> Outcome:
        if not self.marker.exists():
            return Outcome(ServiceResult.NOT_INSTALLED)
        self.stop()
        self.marker.unlink(missing_ok=True)
        return Outcome(ServiceResult.DISABLED)
