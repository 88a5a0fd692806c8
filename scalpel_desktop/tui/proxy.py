"""The dashboard's line to the running proxy: status polls and control actions.

Blocking (urllib through ``ControlClient``): the app calls it from thread
workers only. No Textual here. ``control`` is what ``make_app`` was given:

* None: ``ControlClient.discover()`` on every poll (a proxy started or stopped
  while the dashboard is open is noticed),
* a callable returning a client (tests, the tray),
* a client object itself (anything with ``status()`` and ``action()``).

When no proxy answers, the settings shown are the saved config's, read-only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

NOT_RUNNING = "no proxy running (start: `scalpel start` or the tray)"
SHOWN_SETTINGS = ("paused", "tier", "policy", "tool_filter")

@dataclass(frozen=True)
class ProxyState:
    running: bool
    status: dict[str, Any] = field(default_factory=dict)  # the proxy's /_scalpel/status answer
    settings: dict[str, Any] = field(default_factory=dict)  # paused, tier, policy, tool_filter
    reason: str = ""  # why toggles are disabled (short, stable: shown on screen)
    detail: str = ""  # the full error (paths, ports: shown in tooltips and notifications)

    @property
    def port(self) -> int | None:
        return self.status.get("port") if self.running else None

@dataclass(frozen=True)
class ActionResult:
    what: str
    ok: bool
    message: str
    answer: dict[str, Any] = field(default_factory=dict)

class ProxyLink:
    def __init__(self, control: Any = None):
        self._control = control

    def client(self) -> Any:
        from scalpel_desktop.control_client import ControlClient

        c = self._control
        if c is None:
            return ControlClient.discover(timeout=3.0)
        if callable(c) and not hasattr(c, "status"):
            return c()
        return c

    def poll(self) -> ProxyState:
        from scalpel_desktop.control_client import ControlError

        try:
            status = self.client().status()
        except ControlError as e:
            return ProxyState(False, {}, saved_settings(), NOT_RUNNING, str(e))
        except Exception as e:  # noqa: BLE001 - a broken link must not break the dashboard
            return ProxyState(False, {}, saved_settings(), NOT_RUNNING, f"{type(e).__name__}: {e}")
        if not status.get("running", True):
            return ProxyState(False, status, saved_settings(), NOT_RUNNING, "the proxy says it is not running")
        return ProxyState(True, status, {k: status.get(k) for k in SHOWN_SETTINGS})

    def act(self, what: str, action: str, payload: dict[str, Any] | None = None) -> ActionResult:
        """Run one control action; never raises (the message says what happened)."""
        from scalpel_desktop.control_client import ControlError

        try:
            answer = self.client().action(action, payload or {})
        except ControlError as e:
            return ActionResult(what, False, _short_error(str(e)))
        except Exception as e:  # noqa: BLE001
            return ActionResult(what, False, f"{type(e).__name__}: {e}")
        if isinstance(answer, dict) and answer.get("ok") is False:
            return ActionResult(what, False, str(answer.get("error") or "refused"), answer)
        return ActionResult(what, True, what, answer if isinstance(answer, dict) else {})

def saved_settings() -> dict[str, Any]:
    """The saved config's values (what a proxy started now would use)."""
    try:
        from scalpel_desktop.config import Config

        cfg = Config.load()
        return {k: cfg.get(k) for k in SHOWN_SETTINGS}
    except Exception:  # noqa: BLE001 - an unreadable config: show defaults
        from scalpel_desktop.config import KEYS

        return {k: KEYS[k].default for k in SHOWN_SETTINGS}

def _short_error(message: str) -> str:
    """``/_scalpel/control/tools: HTTP 400: X`` -> ``X``."""
    parts = message.split(": ", 2)
    if len(parts) == 3 and parts[1].startswith("HTTP "):
        return parts[2]
    return message
