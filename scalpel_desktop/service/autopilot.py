"""Autopilot: Claude Code routed through scalpel at login, or not.

``on``   install the login service, start it, wait until the proxy answers its
         health check, and only then point ``env.ANTHROPIC_BASE_URL`` in Claude
         Code's settings at it. A previous value that is not scalpel (a company
         gateway) becomes scalpel's ``anthropic_upstream``. Any failure before
         the settings write rolls back (service removed, upstream restored) and
         leaves the settings untouched.
``off``  restore the previous value first, then stop and remove the service:
         Claude Code never points at a port nobody serves.

Quitting the tray (SPEC section 8): with autopilot on, the proxy belongs to
the login service, not the tray, so quitting the tray leaves it running and
the settings keep working. When the tray owns the proxy and the settings still
point at scalpel (the service is gone), quitting first calls
``release_if_unserved`` which restores the settings.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from typing import Any

from scalpel_desktop import clock
from scalpel_desktop.paths import dirs, home_relative
from scalpel_desktop.service.autostart import choose_backend
from scalpel_desktop.service.base import ServiceBackend, ServiceResult
from scalpel_desktop.service.probe import base_url, health, is_scalpel_url, wait_healthy
from scalpel_desktop.service.settings_file import ClaudeSettings, get_path, object_at

FEATURE = "autopilot"
KEY = ("env", "ANTHROPIC_BASE_URL")
TOOL_SEARCH_KEY = ("env", "ENABLE_TOOL_SEARCH")


NO_SERVICE_MANAGER_WAY = (
    "Without a systemd user bus (a container, WSL without systemd): `scalpel autopilot on --session-hook` "
    "routes Claude Code through scalpel anyway, and Claude Code's hooks start the proxy again whenever a "
    "session begins or a prompt is sent and nothing answers."
)


class AutopilotError(Exception):
    """Autopilot could not change state; the message says what was left as it was."""


@dataclass
class AutopilotStatus:
    enabled: bool
    backend: str
    service_installed: bool
    port: int
    proxy_answering: bool
    settings_file: str
    settings_base_url: str | None
    settings_point_here: bool
    upstream: str
    gateway: str | None = None
    problems: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _state_path():
    return dirs().state / "autopilot.json"


def read_state() -> dict:
    try:
        data = json.loads(_state_path().read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _write_state(data: dict | None) -> None:
    from scalpel_desktop.config import write_json_atomic

    if data is None:
        _state_path().unlink(missing_ok=True)
    else:
        write_json_atomic(_state_path(), data)


def is_on() -> bool:
    return bool(read_state().get("enabled"))


def route_since() -> float | None:
    """Since when autopilot has routed Claude Code through the proxy, uninterrupted (None: it does
    not). ``off`` removes the state, so a later ``on`` starts a new time. A state written before
    this was recorded counts from the file's own time, when ``on`` wrote it. Read by a first
    sighting after a restart (``surgery/resume.py``): cheap, one small file."""
    state = read_state()
    if not state.get("enabled"):
        return None
    at = state.get("enabled_at")
    if isinstance(at, (int, float)) and not isinstance(at, bool):
        return float(at)
    try:
        return _state_path().stat().st_mtime
    except OSError:
        return None


def _config():
    from scalpel_desktop.config import Config

    return Config.load()


def _restore_upstream(state: dict) -> None:
    before = state.get("upstream_before")
    if not state.get("gateway"):
        return
    cfg = _config()
    if before is None:
        cfg._raw.pop("anthropic_upstream", None)  # back to the default
    else:
        cfg.set("anthropic_upstream", before)
    cfg.save()


def on(timeout: float = 30.0, backend: ServiceBackend | None = None, session_hook: bool = False) -> AutopilotStatus:
    """``session_hook``: no login service; Claude Code's hooks start the proxy (session_hook_backend.py)."""
    if session_hook and backend is None:
        from scalpel_desktop.service.session_hook_backend import SessionHookBackend

        backend = SessionHookBackend()
    settings = ClaudeSettings()
    doc = settings.load()  # SettingsError on a file that does not parse: nothing touched yet
    cfg = _config()
    port = int(cfg["port"])
    backend = backend or choose_backend()
    state = read_state()
    current = get_path(doc, KEY)
    if state.get("enabled") and backend.enabled() and health(port) and current == base_url(port):
        return status(backend)
    if health(port) is not None and not backend.enabled():
        raise AutopilotError(
            f"a scalpel proxy already runs on port {port} (started by `scalpel start` or the tray); "
            "stop it first (`scalpel stop`): autopilot runs the proxy as a login service. Nothing was changed."
        )
    gateway = None
    if isinstance(current, str) and current and not is_scalpel_url(current, port):
        gateway = current
    elif not current:
        env_value = os.environ.get("ANTHROPIC_BASE_URL")
        if env_value and not is_scalpel_url(env_value, port):
            gateway = env_value
    new_state = {
        "enabled": False,
        "port": port,
        "backend": backend.name,
        "gateway": gateway,
        "upstream_before": cfg._raw.get("anthropic_upstream"),
    }
    if gateway:
        from scalpel_desktop.config import ConfigError

        try:
            cfg.set("anthropic_upstream", gateway.rstrip("/"))
        except ConfigError as e:
            raise AutopilotError(f"the previous ANTHROPIC_BASE_URL cannot be used as upstream: {e}. Nothing was changed.") from None
        cfg.save()

    def rollback(reason: str, way_forward: str = "") -> None:
        backend.disable()
        _restore_upstream(new_state)
        raise AutopilotError(f"{reason}; Claude Code's settings ({home_relative(settings.path)}) were left untouched "
                             f"and the service was removed.{' ' + way_forward if way_forward else ''}")

    outcome = backend.enable()
    if outcome.result is ServiceResult.UNSUPPORTED:
        rollback(f"no service manager can run the proxy at login here ({outcome.message})", NO_SERVICE_MANAGER_WAY)
    if not outcome.ok:
        rollback(f"the login service ({backend.name}) could not be installed: {outcome.message}")
    if wait_healthy(port, timeout, backend.still_starting) is None:
        log = home_relative(dirs().logs)
        rollback(f"the proxy did not answer its health check on 127.0.0.1:{port} within {timeout:g} s (logs: {log})")

    def edit(d: dict) -> dict:
        replaced = {KEY: get_path(d, KEY, ClaudeSettings.MISSING)}
        env = object_at(d, "env", replaced)
        env["ANTHROPIC_BASE_URL"] = base_url(port)
        # Claude Code switches tool search (deferred tools) off behind any
        # non-first-party base URL unless ENABLE_TOOL_SEARCH is set; scalpel
        # forwards tool_reference blocks untouched, so keep it on. Only when the
        # user has not chosen; `off` removes it again.
        if TOOL_SEARCH_KEY[1] not in env:
            env[TOOL_SEARCH_KEY[1]] = "true"
            replaced[TOOL_SEARCH_KEY] = ClaudeSettings.MISSING
        return replaced

    try:
        settings.apply(FEATURE, edit)
    except Exception as e:
        rollback(f"Claude Code's settings could not be written ({e})")
    new_state["enabled"] = True
    new_state["enabled_at"] = clock.now()  # since when Claude Code has no way out but the proxy (route_since)
    _write_state(new_state)
    return status(backend)


def off(backend: ServiceBackend | None = None) -> AutopilotStatus:
    """Restore the settings first (refuse if they do not parse), then remove the service."""
    settings = ClaudeSettings()
    state = read_state()
    port = int(state.get("port") or _config()["port"])
    restore_settings(settings, port)
    backend = backend or choose_backend()
    outcome = backend.disable()
    _restore_upstream(state)
    _write_state(None)
    if not outcome.ok:
        raise AutopilotError(f"settings restored, but the service could not be removed: {outcome.message}")
    return status(backend)


def restore_settings(settings: ClaudeSettings, port: int) -> bool:
    """Put ANTHROPIC_BASE_URL back as it was; also drop a scalpel URL nobody recorded."""

    def drop_stale(d: dict) -> None:
        value = get_path(d, KEY)
        if isinstance(value, str) and is_scalpel_url(value, port):
            env = d.get("env")
            if isinstance(env, dict):
                env.pop("ANTHROPIC_BASE_URL", None)
                if not env:
                    d.pop("env", None)

    return settings.restore(FEATURE, drop_stale)


def release_if_unserved() -> bool:
    """Called when the tray quits: never leave Claude Code pointing at a dead port.

    If the settings point at scalpel's port and the login service is not
    there to serve it, restore them (autopilot is then off). Returns True when
    it changed the settings.
    """
    state = read_state()
    port = int(state.get("port") or _config()["port"])
    settings = ClaudeSettings()
    try:
        current = get_path(settings.load(), KEY)
    except Exception:  # noqa: BLE001 - unparsable: nothing we may do
        return False
    if not (isinstance(current, str) and is_scalpel_url(current, port)):
        return False
    backend = choose_backend()
    if state.get("enabled") and backend.enabled():
        return False  # the login service serves the port
    if health(port) is not None:
        return False  # another proxy (`scalpel start`) still serves it
    restore_settings(settings, port)
    _restore_upstream(state)
    _write_state(None)
    return True


def status(backend: ServiceBackend | None = None) -> AutopilotStatus:
    backend = backend or choose_backend()
    state = read_state()
    cfg = _config()
    port = int(state.get("port") or cfg["port"])
    settings = ClaudeSettings()
    problems = []
    try:
        current = get_path(settings.load(), KEY)
    except Exception as e:  # noqa: BLE001
        current = None
        problems.append(str(e))
    answering = health(port) is not None
    enabled = bool(state.get("enabled"))
    installed = backend.enabled()
    points = isinstance(current, str) and is_scalpel_url(current, port)
    if enabled and not installed:
        problems.append("autopilot is on but the login service is not installed; run `scalpel autopilot on` again")
    if points and not answering:
        problems.append(f"Claude Code points at 127.0.0.1:{port} but no proxy answers; run `scalpel autopilot off` or start the proxy")
    return AutopilotStatus(
        enabled=enabled,
        backend=backend.name,
        service_installed=installed,
        port=port,
        proxy_answering=answering,
        settings_file=home_relative(settings.path),
        settings_base_url=current if isinstance(current, str) else None,
        settings_point_here=points,
        upstream=str(cfg["anthropic_upstream"]),
        gateway=state.get("gateway"),
        problems=problems,
    )
