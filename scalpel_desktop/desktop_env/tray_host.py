"""Can this session show a tray with a menu, and through which pystray backend?

Asked by the tray (to pick its backend) and by doctor (to report it), so both
give the same answer. Never imports pystray (``import pystray`` with no
DISPLAY raises ``Xlib.error.DisplayNameError``): that is the tray's business.

On Linux the menu needs PyGObject (gtk or appindicator backend), a D-Bus
session bus (both pystray backends open it for notifications before the icon
shows, and fail with a traceback and a hung exit without one: startx without
dbus-x11, ``ssh -X``), and a tray host: a StatusNotifier watcher (KDE, GNOME
with the AppIndicator extension) or an XEmbed system tray (XFCE, MATE, LXQt,
trayer). Stock GNOME has no tray host: each missing piece is detected and
said, not shown as an icon nobody sees.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

#: The Debian/Ubuntu packages the [gtk] extra needs: to build PyGObject, then to run it.
GTK_BUILD_PACKAGES = "libgirepository1.0-dev libcairo2-dev pkg-config"
GTK_RUN_PACKAGES = "gir1.2-gtk-3.0 gir1.2-ayatanaappindicator3-0.1"
GTK_INSTALL_HINT = (
    f"sudo apt install {GTK_BUILD_PACKAGES} {GTK_RUN_PACKAGES} && pip install 'scalpel-desktop[gtk]' "
    "(Fedora: gobject-introspection-devel cairo-gobject-devel gtk3 libayatana-appindicator-gtk3)"
)
GTK_HINT = f"PyGObject is missing, and the tray menu on Linux needs it: {GTK_INSTALL_HINT}"


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


def session_bus_problem() -> str | None:
    """Why no D-Bus session bus can be opened here, or None when one can.

    Opened the way pystray's gtk and appindicator backends open it
    (``Gio.bus_get_sync``: DBUS_SESSION_BUS_ADDRESS, else $XDG_RUNTIME_DIR/bus,
    else autolaunch through dbus-launch), so the answer is theirs, not a guess."""
    try:
        from gi.repository import Gio

        Gio.bus_get_sync(Gio.BusType.SESSION, None)
    except Exception as e:  # noqa: BLE001 - GLib.Error, or gi itself failing
        detail = str(getattr(e, "message", "") or e).strip()
        if not os.environ.get("DBUS_SESSION_BUS_ADDRESS"):
            detail = f"DBUS_SESSION_BUS_ADDRESS unset; {detail}" if detail else "DBUS_SESSION_BUS_ADDRESS unset"
        return detail or "the session bus cannot be opened"
    return None


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


def xembed_tray_running() -> bool | None:
    """Does an XEmbed system tray (trayer, XFCE, MATE, KDE's legacy tray) own ``_NET_SYSTEM_TRAY_S<n>``?

    Asked through libX11 with ctypes (python-xlib is not always installed); None when
    the X display cannot be opened or libX11 is missing."""
    import ctypes
    import ctypes.util

    try:
        lib = ctypes.CDLL(ctypes.util.find_library("X11") or "libX11.so.6")
        lib.XOpenDisplay.restype = ctypes.c_void_p
        lib.XOpenDisplay.argtypes = [ctypes.c_char_p]
        lib.XDefaultScreen.argtypes = [ctypes.c_void_p]
        lib.XInternAtom.restype = ctypes.c_ulong
        lib.XInternAtom.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]
        lib.XGetSelectionOwner.restype = ctypes.c_ulong
        lib.XGetSelectionOwner.argtypes = [ctypes.c_void_p, ctypes.c_ulong]
        lib.XCloseDisplay.argtypes = [ctypes.c_void_p]
    except (OSError, AttributeError):
        return None
    dpy = lib.XOpenDisplay(None)
    if not dpy:
        return None
    try:
        atom = lib.XInternAtom(dpy, b"_NET_SYSTEM_TRAY_S%d" % lib.XDefaultScreen(dpy), 0)
        return lib.XGetSelectionOwner(dpy, atom) != 0
    finally:
        lib.XCloseDisplay(dpy)


@dataclass(frozen=True)
class TrayHost:
    """Which pystray backend to use here, or (``backend == "none"``) why none, and how to get one."""

    backend: str  # appindicator | gtk | none
    reason: str = ""
    hint: str = ""


NO_DISPLAY_HINT = "start `scalpel tray` inside a desktop session"
NO_BUS_HINT = ("start the desktop session with a session bus (Debian/Ubuntu: sudo apt install dbus-x11), "
               "or run the tray inside one: `dbus-run-session -- scalpel tray`")
NO_HOST_HINT = ("on GNOME install and enable the AppIndicator extension (Debian/Ubuntu: "
                "gnome-shell-extension-appindicator), then run `scalpel tray`")


def find_linux_host() -> TrayHost:
    """appindicator where a StatusNotifier watcher runs, else gtk where an XEmbed tray runs, else none
    (also none without a session bus, which both backends need).

    Never the xorg backend: it has no menu, gets no clicks, and prints "Failed to dock
    icon" tracebacks where no tray runs (set ``PYSTRAY_BACKEND=xorg`` to force it)."""
    display, wayland = os.environ.get("DISPLAY"), os.environ.get("WAYLAND_DISPLAY")
    if not (display or wayland):
        return TrayHost("none", "no display (DISPLAY/WAYLAND_DISPLAY unset)", NO_DISPLAY_HINT)
    if not gtk_available():
        return TrayHost("none", "PyGObject (GTK 3) is missing", GTK_INSTALL_HINT)
    bus_problem = session_bus_problem()
    if bus_problem is not None:
        return TrayHost("none", f"no D-Bus session bus, which the tray needs ({bus_problem})", NO_BUS_HINT)
    if appindicator_available() and sni_watcher_running():
        return TrayHost("appindicator")
    if display and xembed_tray_running():
        return TrayHost("gtk")
    return TrayHost("none", "no tray host on this desktop (no StatusNotifier watcher, no system tray)", NO_HOST_HINT)
