"""TEST backend: a real ``scalpel start`` child, supervised like a login service, stands in for one.

Selected with the documented TEST setting ``SCALPEL_TEST_SERVICE_BACKEND=process``.
It never talks to a service manager. "Installing" writes a marker file under
``dirs().state`` and starts a small supervisor in its own session
(``python -m scalpel_desktop.service.process_backend``), which runs
``python -m scalpel_desktop start`` and starts it again after *any* exit, as
the real units do while autopilot is on (systemd ``Restart=always``, launchd
``KeepAlive``). ``stop()`` ends the supervisor and its child (like
``systemctl --user stop``: installed, not running); "removing" stops it and
deletes the marker. Extra arguments for the child can be given in
``SCALPEL_TEST_SERVICE_ARGS`` (space separated), e.g. ``--port 1`` to make it
fail for real.

The marker holds ``{"supervisor": pid, "pid": child pid, "starts": n, "last_exit": the previous
child's exit status (negative: killed by that signal)}``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from scalpel_desktop.atomicfile import write_atomic
from scalpel_desktop.control_client import pid_alive
from scalpel_desktop.paths import dirs, ensure_private_dir
from scalpel_desktop.private_files import open_private_append
from scalpel_desktop.service.base import Outcome, ServiceBackend, ServiceResult

RESTART_S = 0.5  # like RestartSec=: the pause before starting the child again


def _alive(pid: int) -> bool:
    """``pid_alive``, after reaping the child if it is ours and has exited (no zombie left behind)."""
    if pid <= 0:
        return False
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass  # not our child: pid_alive tells
    return pid_alive(pid)


def _marker() -> Path:
    return dirs().state / "test-service.json"


def _read() -> dict:
    try:
        doc = json.loads(_marker().read_text())
        return doc if isinstance(doc, dict) else {}
    except (OSError, ValueError):
        return {}


def _write(doc: dict) -> None:

    write_atomic(_marker(), json.dumps(doc).encode(), mode=0o600)


def _end(pid: int, wait_s: float = 10.0) -> None:
    """SIGTERM, then SIGKILL after ``wait_s``."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline and _alive(pid):
        time.sleep(0.05)
    if _alive(pid):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


class ProcessBackend(ServiceBackend):
    name = "test-process"

    @property
    def marker(self) -> Path:
        return _marker()

    def files(self) -> dict[Path, bytes]:
        return {self.marker: b"{}"}

    def enabled(self) -> bool:
        return self.marker.exists()

    def supervisor_pid(self) -> int | None:
        pid = _read().get("supervisor")
        return pid if isinstance(pid, int) and _alive(pid) else None

    def pid(self) -> int | None:
        """The proxy child's pid while the supervisor and the child both run."""
        doc = _read()
        pid = doc.get("pid")
        if self.supervisor_pid() is None:
            return None
        return pid if isinstance(pid, int) and _alive(pid) else None

    def starts(self) -> int:
        """How many times the supervisor has started the proxy (1 + restarts)."""
        n = _read().get("starts")
        return n if isinstance(n, int) else 0

    def enable(self) -> Outcome:
        return self.start()

    def start(self) -> Outcome:
        if self.supervisor_pid() is not None:
            return Outcome(ServiceResult.ENABLED)
        argv = [sys.executable, "-m", "scalpel_desktop.service.process_backend"]
        ensure_private_dir(dirs().logs)
        log = open_private_append(dirs().logs / "test-service.log", binary=True)
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        except OSError as e:
            return Outcome(ServiceResult.FAILED, f"cannot start {argv[0]}: {e}")
        finally:
            log.close()
        # The supervisor is the marker's only writer; wait until it has named itself.
        deadline = time.monotonic() + 15
        while _read().get("supervisor") != proc.pid:
            if proc.poll() is not None or time.monotonic() > deadline:
                return Outcome(ServiceResult.FAILED, f"the test service supervisor did not start (see {dirs().logs / 'test-service.log'})")
            time.sleep(0.02)
        return Outcome(ServiceResult.ENABLED)

    def still_starting(self) -> bool:
        """The supervisor runs and its last proxy did not give up on its own (an exit status above 0:
        port taken, bad config). A proxy killed by a signal (kill -9) is only restarting, as under
        systemd's ``Restart=always``."""
        if self.supervisor_pid() is None:
            return False
        last = _read().get("last_exit")
        return not (isinstance(last, int) and last > 0)

    def stop(self) -> None:
        """Stop the service now (it stays installed): the supervisor ends its child, then itself."""
        pid = _read().get("supervisor")
        if isinstance(pid, int) and _alive(pid):
            _end(pid, wait_s=15.0)
        child = _read().get("pid")
        if isinstance(child, int) and _alive(child):
            _end(child)

    def kill_proxy(self) -> int | None:
        """Tests: kill -9 the proxy child (not the supervisor), as a crash would; its pid."""
        pid = self.pid()
        if pid is not None:
            os.kill(pid, signal.SIGKILL)
        return pid

    def disable(self) -> Outcome:
        if not self.marker.exists():
            return Outcome(ServiceResult.NOT_INSTALLED)
        self.stop()
        self.marker.unlink(missing_ok=True)
        return Outcome(ServiceResult.DISABLED)


def supervise() -> int:
    """The supervisor's loop: run the proxy, start it again after any exit, until SIGTERM."""
    argv = [sys.executable, "-m", "scalpel_desktop", "start", "--quiet",
            *os.environ.get("SCALPEL_TEST_SERVICE_ARGS", "").split()]
    stopping = False
    child: subprocess.Popen | None = None

    def on_term(signum, frame):  # noqa: ARG001
        nonlocal stopping
        stopping = True
        if child is not None and child.poll() is None:
            child.terminate()

    signal.signal(signal.SIGTERM, on_term)
    starts, last_exit = 0, None
    _write({"supervisor": os.getpid(), "pid": None, "starts": 0, "argv": argv})
    while not stopping:
        child = subprocess.Popen(argv, stdin=subprocess.DEVNULL)
        starts += 1
        _write({"supervisor": os.getpid(), "pid": child.pid, "starts": starts, "argv": argv, "last_exit": last_exit})
        while True:
            try:
                last_exit = child.wait()
                break
            except InterruptedError:
                continue
        _write({"supervisor": os.getpid(), "pid": child.pid, "starts": starts, "argv": argv, "last_exit": last_exit})
        if not stopping:
            time.sleep(RESTART_S)
    return 0


if __name__ == "__main__":
    raise SystemExit(supervise())
