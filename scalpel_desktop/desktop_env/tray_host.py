"""Can this session show a tray with a menu, and through which pystray backend?

Asked by the tray (to pick its backend) and by doctor (to report it), so both
give the same answer. Never imports pystray (``import pystray`` with no
DISPLAY raises ``Xlib.error.DisplayNameError``): that is the tray's business.

On Linux the menu needs PyGObject (gtk or appindicator backend); the xorg
backend has no menu and gets no clicks, so it is only a last resort.
"""

from __future__ import annotations

import os
import sys

GTK_HINT = (
    "PyGObject is missing, and the tray menu on Linux needs it: "
    "pip install 'scalpel-desktop[gtk]' (Debian/Ubuntu also need gir1.2-gtk-3.0 and "
    "gir1.2-ayatanaappindicator3-0.1)"
)


def has_display() -> bool:
    """A graphical session: always on macOS and Windows, DISPLAY or WAYLAND_DISPLAY elsewhere."""
    if sys.platform in ("darwin", "win32"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def gtk_available() -> bool:
    """PyGObject and the Gtk 3.0 typelib: what a tray with a menu needs on Linux."""
    try:
        import gi

        gi.require_version("Gtk", "3.0")
        from gi.repository import Gtk  # noqa: F401
    except Exception:  # noqa: BLE001 - ImportError, ValueError, or a GTK init error
        return False
    return True


def appindicator_available() -> bool:
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


def sni_watcher_running() -> bool:
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
        if appindicator_available() and sni_watcher_running():
            return "appindicator", ""
        return "gtk", ""
    if not os.environ.get("DISPLAY"):
        return "none", GTK_HINT
    return "xorg", GTK_HINT + "; falling back to the xorg backend: an icon with no menu and no clicks"
