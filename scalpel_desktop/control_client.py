"""Talk to a running proxy's control API (the CLI, the tray, the TUI and hooks use it).

Standard library only (http.client): importing this never pulls in aiohttp.
The client closes its connection itself once it has the answer (no
``Connection: close``), so the short-lived TIME_WAIT stays on the client's
port, never on the proxy's: a hook calling in just before the proxy stops
leaves nothing in the way of whatever binds the port next.
``ControlClient.discover()`` reads the runtime file (pid, port) and the
per-install token; it raises ``ProxyNotRunning`` with a message a user can
act on when there is no proxy (no runtime file, a dead pid, nothing
answering on the port).

Errors::

    ControlError            the proxy answered with an error (status, message)
    ProxyNotRunning         nothing to talk to
"""

from __future__ import annotations

import http.client
import json
import os
from typing import Any

from scalpel_desktop.errors import ProxyError
from scalpel_desktop.paths import dirs


class ControlError(ProxyError):
    """The control API did not answer as asked (``status``: its HTTP status, 0 when none)."""

    title = "Control API"

    def __init__(self, message: str, status: int = 0):
        super().__init__(message)
        self.status = status


class ProxyNotRunning(ControlError):
    title = "Proxy not running"


def runtime_info() -> dict[str, Any] | None:
    """The running proxy's runtime file ({pid, port, started_at, version}), or None."""
    try:
        info = json.loads(dirs().runtime_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return info if isinstance(info, dict) else None


def pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    if os.name == "nt":  # pragma: no cover - Windows
        import ctypes

        handle = ctypes.windll.kernel32.OpenProcess(0x1000, False, pid)
        if handle:
            ctypes.windll.kernel32.CloseHandle(handle)
            return True
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # Linux: an exited child not yet reaped (a zombie) is not running
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return True


class ControlClient:
    def __init__(self, port: int, token: str = "", host: str = "127.0.0.1", timeout: float = 5.0, pid: int | None = None):
        self.port = port
        self.token = token
        self.host = host
        self.timeout = timeout
        self.pid = pid

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @classmethod
    def discover(cls, timeout: float = 5.0) -> "ControlClient":
        info = runtime_info()
        if info is None:
            raise ProxyNotRunning(
                f"scalpel is not running (no {dirs().runtime_file.name} in {dirs().state}); start it with `scalpel start`"
            )
        try:
            port, pid = int(info["port"]), int(info.get("pid") or 0)
        except (KeyError, TypeError, ValueError):
            raise ProxyNotRunning(f"scalpel is not running ({dirs().runtime_file} is unreadable)") from None
        if pid and not pid_alive(pid):
            raise ProxyNotRunning(
                f"scalpel is not running (pid {pid} from {dirs().runtime_file.name} is gone); start it with `scalpel start`"
            )
        try:
            token = dirs().token_file.read_text(encoding="utf-8").strip()
        except OSError:
            token = ""
        return cls(port, token, timeout=timeout, pid=pid or None)

    # -- requests --------------------------------------------------------------
    def _call(self, method: str, path: str, payload: dict | None = None, auth: bool = False) -> dict[str, Any]:
        data = None if payload is None else json.dumps(payload).encode("utf-8")
        headers = {"Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = "application/json"
        if auth:
            if not self.token:
                raise ControlError(f"no control token in {dirs().token_file}; restart scalpel to create one")
            headers["Authorization"] = f"Bearer {self.token}"
        # A direct connection: loopback control calls never go through an environment proxy.
        conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
        try:
            conn.request(method, path, body=data, headers=headers)
            resp = conn.getresponse()
            body, status = resp.read(), resp.status
        except (http.client.HTTPException, ConnectionError, TimeoutError, OSError) as e:
            raise ProxyNotRunning(
                f"scalpel is not answering on {self.host}:{self.port} ({e or type(e).__name__}); "
                "start it with `scalpel start`"
            ) from None
        finally:
            conn.close()
        if status >= 400:
            try:
                msg = json.loads(body).get("error") or body.decode("utf-8", "replace")
            except (ValueError, AttributeError):
                msg = body.decode("utf-8", "replace")[:300]
            raise ControlError(f"{path}: HTTP {status}: {msg}", status=status)
        try:
            out = json.loads(body) if body else {}
        except ValueError:
            raise ControlError(f"{path}: the answer is not JSON") from None
        return out if isinstance(out, dict) else {"result": out}

    def health(self) -> dict[str, Any]:
        return self._call("GET", "/_scalpel/health")

    def status(self) -> dict[str, Any]:
        return self._call("GET", "/_scalpel/status")

    def action(self, name: str, payload: dict | None = None) -> dict[str, Any]:
        return self._call("POST", f"/_scalpel/control/{name}", payload or {}, auth=True)

    def set_settings(self, values: dict[str, Any]) -> dict[str, Any]:
        return self.action("settings", values)

    def pause(self) -> dict[str, Any]:
        return self.action("pause")

    def resume(self) -> dict[str, Any]:
        return self.action("resume")

    def stop(self) -> dict[str, Any]:
        return self.action("stop")
