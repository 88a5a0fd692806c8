"""Linux: a systemd user unit for the proxy plus an XDG autostart entry for the tray."""

from __future__ import annotations

import os
from pathlib import Path

from scalpel_desktop.paths import user_home
from scalpel_desktop.service.base import Outcome, ServiceBackend, ServiceResult
from scalpel_desktop.service.templates import (
    DESKTOP_NAME,
    UNIT_NAME,
    python_launch,
    render_desktop_entry,
    render_systemd_unit,
)


def _xdg_config_home() -> Path:
    return Path(os.environ.get("XDG_CONFIG_HOME") or user_home() / ".config")


#: What systemctl says where no systemd user instance runs (containers, WSL without systemd),
#: or where systemctl itself is missing.
NO_BUS_SIGNS = ("failed to connect to bus", "dbus_session_bus_address", "xdg_runtime_dir", "no medium found",
                "system has not been booted with systemd", "systemctl: [errno 2]", "no such file or directory")


def no_user_bus(message: str) -> bool:
    m = (message or "").lower()
    return any(sign in m for sign in NO_BUS_SIGNS)


def tray_icon_path() -> Path:
    from scalpel_desktop.paths import dirs

    return dirs().data / "icons" / "scalpel-desktop.png"


class SystemdBackend(ServiceBackend):
    name = "systemd"

    @property
    def unit_path(self) -> Path:
        return _xdg_config_home() / "systemd" / "user" / UNIT_NAME

    @property
    def desktop_path(self) -> Path:
        return _xdg_config_home() / "autostart" / DESKTOP_NAME

    def files(self) -> dict[Path, bytes]:
        unit = render_systemd_unit(python_launch("start"))
        entry = render_desktop_entry(python_launch("tray"), str(tray_icon_path()))
        return {self.unit_path: unit.encode(), self.desktop_path: entry.encode()}

    def _write_icon(self) -> None:
        try:
            from scalpel_desktop.desktop_env.icons import save_png
            from scalpel_desktop.paths import ensure_private_dir

            ensure_private_dir(tray_icon_path().parent)
            os.chmod(save_png("active", tray_icon_path()), 0o600)  # read by the same user's desktop
        except Exception:  # noqa: BLE001 - an icon is cosmetic
            pass

    def enable(self) -> Outcome:
        self._write_files()
        self._write_icon()
        for argv in (["systemctl", "--user", "daemon-reload"], ["systemctl", "--user", "enable", "--now", UNIT_NAME]):
            ok, msg = self._call(argv)
            if not ok:
                result = ServiceResult.UNSUPPORTED if no_user_bus(msg) else ServiceResult.FAILED
                return Outcome(result, f"`{' '.join(argv)}` failed: {msg or 'no message'}")
        return Outcome(ServiceResult.ENABLED)

    def disable(self) -> Outcome:
        if not self.unit_path.exists() and not self.desktop_path.exists():
            return Outcome(ServiceResult.NOT_INSTALLED)
        ok, msg = self._call(["systemctl", "--user", "disable", "--now", UNIT_NAME])
        self._remove_files()
        self._call(["systemctl", "--user", "daemon-reload"])
        if not ok:
            return Outcome(ServiceResult.FAILED, f"`systemctl --user disable --now {UNIT_NAME}` failed: {msg or 'no message'} (files removed)")
        return Outcome(ServiceResult.DISABLED)

    def start(self) -> Outcome:
        ok, msg = self._call(["systemctl", "--user", "start", UNIT_NAME])
        return Outcome(ServiceResult.ENABLED if ok else ServiceResult.FAILED, msg)
