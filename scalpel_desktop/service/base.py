"""Login-service backends: one class per platform, results as enums.

Like maestral's ``autostart.py``: each backend renders its files, installs them
(``enable``: write the files, register with the OS service manager, start
now), removes them (``disable``: stop, unregister, delete) and reports whether
it is installed (``enabled``). The CLI renders the results.

Backends::

    SystemdBackend   Linux: ~/.config/systemd/user/scalpel-desktop.service
                     + ~/.config/autostart/scalpel-desktop-tray.desktop
    LaunchdBackend   macOS: ~/Library/LaunchAgents/dev.scalpel-desktop*.plist
    WindowsBackend   Windows: two logon tasks (proxy, tray) via schtasks
    ProcessBackend   TEST setting SCALPEL_TEST_SERVICE_BACKEND=process: starts a
                     real ``scalpel start`` child process; never touches a
                     service manager (tests use it for the health-check order)

Commands that talk to a service manager go through ``self.run`` (an injectable
runner), so a test can render and install into a temporary HOME without ever
calling ``systemctl``/``launchctl``/``schtasks``. Which backend serves this
machine is ``service/autostart.py``'s choice: this module never imports a backend.
"""

from __future__ import annotations

import enum
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence


class ServiceResult(enum.Enum):
    ENABLED = "enabled"
    DISABLED = "disabled"
    NOT_INSTALLED = "not installed"
    FAILED = "failed"
    UNSUPPORTED = "unsupported"


@dataclass(frozen=True)
class Outcome:
    """A backend's answer: a result, and on failure a title and a message."""

    result: ServiceResult
    message: str = ""

    @property
    def ok(self) -> bool:
        return self.result in (ServiceResult.ENABLED, ServiceResult.DISABLED, ServiceResult.NOT_INSTALLED)


Runner = Callable[[Sequence[str]], "subprocess.CompletedProcess[str]"]


def run_command(argv: Sequence[str]) -> "subprocess.CompletedProcess[str]":
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=30, check=False)


class ServiceBackend:
    name = "base"

    def __init__(self, runner: Runner | None = None):
        self.run: Runner = runner or run_command

    def files(self) -> dict[Path, bytes]:
        """Every file ``enable`` writes, rendered."""
        raise NotImplementedError

    def enable(self) -> Outcome:
        raise NotImplementedError

    def disable(self) -> Outcome:
        raise NotImplementedError

    def start(self) -> Outcome:
        """Start the installed service now (the SessionStart hook uses it)."""
        raise NotImplementedError

    def enabled(self) -> bool:
        return all(p.exists() for p in self.files())

    def still_starting(self) -> bool:
        """While ``enable`` waits for health: False once the service has surely failed.

        A real service manager gives no quick answer, so the default waits out
        the timeout; the test backend knows when its first proxy died."""
        return True

    def describe(self) -> str:
        return ", ".join(str(p) for p in self.files()) or self.name

    # helpers
    def _write_files(self) -> None:
        from scalpel_desktop.atomicfile import write_atomic

        for path, data in self.files().items():
            write_atomic(path, data, mode=0o644)

    def _remove_files(self) -> None:
        for path in self.files():
            try:
                path.unlink()
            except FileNotFoundError:
                pass

    def _call(self, argv: Sequence[str]) -> tuple[bool, str]:
        try:
            cp = self.run(argv)
        except (OSError, subprocess.SubprocessError) as e:
            return False, f"{argv[0]}: {e}"
        return cp.returncode == 0, (cp.stderr or cp.stdout or "").strip()
