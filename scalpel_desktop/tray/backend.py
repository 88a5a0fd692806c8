"""Pick and import a pystray backend, lazily, and say clearly when there is none.

``import pystray`` with no DISPLAY raises ``Xlib.error.DisplayNameError`` (not
ImportError), so the import is guarded by a catch-all. On Linux the menu
needs PyGObject (gtk or appindicator backend); the xorg backend has no menu
and gets no clicks, so it is only a last resort, with a warning. With no
backend at all the caller runs headless.

``PYSTRAY_BACKEND`` set by the user (or the tests: ``dummy``) is respected.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import Any

GTK_HINT = (
    "PyGObject is missing, and the tray menu on Linux needs it: "
    "pip install 'scalpel-desktop[gtk]' (Debian/Ubuntu also need gir1.2-gtk-3.0 and "
    "gir1.2-ayatanaappindicator3-0.1)"
)


@dataclass
class BackendChoice:
    pystray: Any | None  # the imported module, or None (run headless)
    name: str  # gtk | appindicator | xorg | darwin | win32 | dummy | none
    warning: str = ""


def gtk_available() -> bool:
    """PyGObject and the Gtk 3.0 typelib: what a tray with a menu needs on Linux."""
    try:
        import gi

        gi.require_version("Gtk", "3.0")
        from gi.repository import Gtk  # noqa: F401
    except Exception:  # noqa: BLE001 - ImportError, ValueError, or a GTK init error
        return False
    return True


def _appindicator_available() -> bool:
    try:
        import gi

        for name in ("AyatanaAppIndicator3", "AppIndicator3"):
            try:
                gi.require_version(name, "0.1")
                return True
            except ValueError:
                continue
    except Exception:  # noqa: BLE001
        pass
    return False


def _sni_watcher_running() -> bool:
    """A StatusNotifier host (KDE, GNOME's appindicator extension) is on the session bus."""
    try:
        from gi.repository import Gio, GLib

        bus = Gio.bus_get_sync(Gio.BusType.SESSION, None)
        reply = bus.call_sync(
            "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "NameHasOwner",
            GLib.Variant("(s)", ("org.kde.StatusNotifierWatcher",)), GLib.VariantType("(b)"),
            Gio.DBusCallFlags.NONE, 500, None,
        )
        return bool(reply.unpack()[0])
    except Exception:  # noqa: BLE001
        return False


def linux_backend_name() -> tuple[str, str]:
    """(backend, warning) for Linux: appindicator where a watcher runs, else gtk, else xorg."""
    if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        return "none", "no display (DISPLAY/WAYLAND_DISPLAY unset)"
    if gtk_available():
        if _appindicator_available() and _sni_watcher_running():
            return "appindicator", ""
        return "gtk", ""
    if not os.environ.get("DISPLAY"):
        return "none", GTK_HINT
    return "xorg", GTK_HINT + "; falling back to the xorg backend: an icon with no menu and no clicks"


def choose() -> BackendChoice:
    """Import pystray with the best backend here; never raises."""
    name = os.environ.get("PYSTRAY_BACKEND", "")
    warning = ""
    if not name and sys.platform.startswith("linux"):
        name, warning = linux_backend_name()
        if name == "none":
            return BackendChoice(None, "none", warning)
        os.environ["PYSTRAY_BACKEND"] = name
    try:
        import pystray
    except Exception as e:  # noqa: BLE001 - Xlib.error.DisplayNameError is not an ImportError
        return BackendChoice(None, "none", f"no tray available ({type(e).__name__}: {e})")
    actual = getattr(getattr(pystray.Icon, "__module__", ""), "rsplit", lambda *_: [""])(".", 1)[-1]
    return BackendChoice(pystray, actual.lstrip("_") or name or sys.platform, warning)
