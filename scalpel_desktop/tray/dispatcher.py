"""Map tray command names to actions; never raises.

As in jellyfin-mpv-shim's tray manager: menu items only emit names, this
object runs them against the proxy (through a ``ProxyLink``: the tray's own
Runtime, or the control API of a proxy the login service runs), autopilot,
the terminal and the file manager. An error becomes the menu's status line
(``TrayState.message``) instead of an exception in the GUI thread.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable, Protocol

from scalpel_desktop.paths import make_private_parents
from scalpel_desktop.tray.menu import COMMANDS, TrayState

log = logging.getLogger("scalpel.tray")


class ProxyLink(Protocol):
    def status(self) -> dict | None: ...
    def set_settings(self, values: dict[str, Any]) -> Any: ...
    def autopilot_on(self) -> None: ...
    def autopilot_off(self) -> None: ...
    def autopilot_enabled(self) -> bool: ...


def open_folder(path: Path) -> None:
    make_private_parents(path)
    if sys.platform == "darwin":
        argv = ["open", str(path)]
    elif sys.platform == "win32":  # pragma: no cover - Windows
        os.startfile(str(path))  # type: ignore[attr-defined]
        return
    else:
        argv = ["xdg-open", str(path)]
    subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                     start_new_session=True)


class Dispatcher:
    def __init__(
        self,
        link: ProxyLink,
        *,
        on_quit: Callable[[], None],
        open_dashboard: Callable[[], str | None] | None = None,
        open_data_folder: Callable[[], None] | None = None,
        on_change: Callable[[], None] | None = None,
    ):
        self.link = link
        self.state = TrayState()
        self.on_quit = on_quit
        self._open_dashboard = open_dashboard or _default_open_dashboard
        self._open_data_folder = open_data_folder or _default_open_data_folder
        self.on_change = on_change or (lambda: None)
        self.history: list[tuple[str, bool]] = []

    # -- state -------------------------------------------------------------
    def refresh(self) -> TrayState:
        """Re-read the proxy's status (never raises)."""
        s = self.state
        try:
            snap = self.link.status()
        except Exception as e:  # noqa: BLE001
            snap = None
            s.message = f"status: {e}"
        try:
            s.autopilot = bool(self.link.autopilot_enabled())
        except Exception:  # noqa: BLE001
            pass
        if snap is None:
            s.running, s.icon = False, "off"
            return s
        s.running = bool(snap.get("running", True))
        s.paused = bool(snap.get("paused"))
        s.tier = int(snap.get("tier") or s.tier)
        s.policy = str(snap.get("policy") or s.policy)
        s.tool_filter = bool(snap.get("tool_filter"))
        s.port = snap.get("port")
        # None stays None: the proxy could not read the ledger, so today's figures are unknown, not 0.
        s.requests_today = _or_none(int, snap.get("requests_today"))
        s.saved_tokens_today = _or_none(int, snap.get("saved_tokens_today"))
        s.saved_usd_today = _or_none(float, snap.get("saved_usd_today"))
        s.misses_today = _or_none(int, snap.get("misses_today"))  # TrayLink.status: store/misses.py
        s.miss_usd_today = _or_none(float, snap.get("miss_usd_today"))
        s.problems = [(str(d.get("label") or d.get("code")), str(d.get("reason") or ""))
                      for d in snap.get("degraded") or [] if isinstance(d, dict) and d.get("severity") in ("fail", "warn")]
        state = snap.get("state")
        failing = any(isinstance(d, dict) and d.get("severity") == "fail" for d in snap.get("degraded") or [])
        if state == "error" or (s.running and failing):  # a feature off shows on the icon itself
            s.icon = "error"
        elif not s.running:
            s.icon = "off"
        else:
            s.icon = "paused" if s.paused else "active"
        return s

    # -- commands ----------------------------------------------------------
    def dispatch(self, command: str) -> bool:
        """Run ``command``; True on success. Errors go to the status line, never up."""
        ok = True
        try:
            if command not in COMMANDS:
                raise ValueError(f"unknown command {command!r}")
            self.state.message = ""
            self._run(command)
        except Exception as e:  # noqa: BLE001 - never raise into the GUI toolkit
            ok = False
            self.state.message = f"{command.split(':')[0].replace('_', ' ')} failed: {e}"
            log.warning("tray command %s failed: %s", command, e)
        self.history.append((command, ok))
        if command != "quit":
            keep = self.state.message
            self.refresh()
            if keep and not self.state.message:
                self.state.message = keep
            try:
                self.on_change()
            except Exception:  # noqa: BLE001
                log.exception("tray refresh failed")
        return ok

    def _run(self, command: str) -> None:
        if command == "toggle_pause":
            snap = self.link.status()
            if snap is None:
                raise RuntimeError("no proxy is running")
            self.link.set_settings({"paused": not bool(snap.get("paused"))})
        elif command == "toggle_autopilot":
            if self.link.autopilot_enabled():
                self.link.autopilot_off()
            else:
                self.link.autopilot_on()
        elif command.startswith("tier:"):
            self.link.set_settings({"tier": int(command.split(":", 1)[1])})
        elif command.startswith("policy:"):
            self.link.set_settings({"policy": command.split(":", 1)[1]})
        elif command == "toggle_tool_filter":
            snap = self.link.status() or {}
            self.link.set_settings({"tool_filter": not bool(snap.get("tool_filter"))})
        elif command == "open_dashboard":
            problem = self._open_dashboard()
            if problem:
                raise RuntimeError(problem)
        elif command == "open_data_folder":
            self._open_data_folder()
        elif command == "quit":
            self.on_quit()


def _or_none(kind: Callable[[Any], Any], value: Any) -> Any:
    """``kind(value)``; None for None (an unknown figure); 0 for anything unreadable."""
    if value is None:
        return None
    try:
        return kind(value)
    except (TypeError, ValueError):
        return kind(0)


def _default_open_dashboard() -> str | None:
    from scalpel_desktop.tray.terminal import open_tui

    return open_tui()


def _default_open_data_folder() -> None:
    from scalpel_desktop.paths import dirs

    open_folder(dirs().data)
