"""The runtime's small persistent facts and counters.

- ``InstanceLock``: one running proxy per user. An OS file lock (``flock``;
  ``msvcrt`` on Windows) that dies with the process, so a crash never leaves
  a stale lock; its content names the pid and port holding it.
- ``read_holder``: where the running one is (runtime file, else lock file).
- ``ensure_token``: the per-install control token, created 0600 on first use.
- ``Stats``: request counters the proxy thread updates and any thread reads
  (since the process started; "today" comes from the ledger, see ``Runtime.status``).
"""

from __future__ import annotations

import json
import os
import secrets
import threading
from typing import Any

from scalpel_desktop.atomicfile import write_atomic
from scalpel_desktop.paths import dirs, ensure_private_dir


class InstanceLock:
    """An exclusive OS lock on ``path``; released when closed or when the process dies."""

    def __init__(self, path):
        self.path = path
        self._fd: int | None = None

    def acquire(self) -> bool:
        ensure_private_dir(self.path.parent)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            os.fchmod(fd, 0o600)  # one an older version left wider
        except OSError:
            pass
        try:
            if os.name == "nt":  # pragma: no cover - Windows
                import msvcrt

                msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
            else:
                import fcntl

                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return False
        self._fd = fd
        return True

    def describe(self, info: dict) -> None:
        """Write who holds the lock (pid, port) into it, for a second start to read."""
        if self._fd is None or os.name == "nt":
            return
        data = (json.dumps(info, sort_keys=True) + "\n").encode()
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, data, 0)

    def release(self) -> None:
        if self._fd is not None:
            try:
                os.close(self._fd)
            finally:
                self._fd = None


def read_holder() -> tuple[int | None, int | None]:
    """(pid, port) of the running instance, from the runtime file or the lock file."""
    for path in (dirs().runtime_file, dirs().lock_file):
        try:
            info = json.loads(path.read_text(encoding="utf-8"))
            return int(info.get("pid")), int(info.get("port"))
        except (OSError, ValueError, TypeError, AttributeError):
            continue
    return None, None


def ensure_token() -> str:
    """The per-install control token; created (0600) on first use."""
    path = dirs().token_file
    try:
        token = path.read_text(encoding="utf-8").strip()
        if token:
            return token
    except FileNotFoundError:
        pass
    token = secrets.token_urlsafe(32)
    write_atomic(path, (token + "\n").encode("utf-8"), mode=0o600)
    return token


class Stats:
    """Counters the proxy thread updates and any thread reads."""

    def __init__(self):
        self._lock = threading.Lock()
        self.requests = 0
        self.api_requests = 0
        self.errors = 0
        self.tokens_in = 0
        self.tokens_out = 0
        self.last_error = ""

    def record(self, finished: Any) -> None:
        with self._lock:
            self.requests += 1
            if finished.piped:
                self.api_requests += 1
            if finished.error or finished.status >= 400 or finished.status == 0:
                self.errors += 1
                self.last_error = finished.error or f"HTTP {finished.status} from {finished.api} upstream"
            if finished.usage is not None:
                self.tokens_in += finished.usage.prompt_tokens
                self.tokens_out += finished.usage.output_tokens

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            return {
                "requests": self.requests,
                "api_requests": self.api_requests,
                "errors": self.errors,
                "tokens_in": self.tokens_in,
                "tokens_out": self.tokens_out,
                "last_error": self.last_error,
            }
