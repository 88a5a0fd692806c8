"""Whether this session can show a tray with a menu, which backend pystray should use, and why not."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from scalpel_desktop.desktop_env import tray_host
from tests.support import require


@pytest.fixture
def linux(monkeypatch):
    monkeypatch.setattr(tray_host.sys, "platform", "linux")
    monkeypatch.setattr(tray_host, "gtk_available", lambda: True)
    monkeypatch.setattr(tray_host, "appindicator_available", lambda: True)
    monkeypatch.setattr(tray_host, "session_bus_problem", lambda: None)
    monkeypatch.setattr(tray_host, "sni_watcher_running", lambda: False)
    monkeypatch.setattr(tray_host, "xembed_tray_running", lambda: False)
    monkeypatch.setenv("DISPLAY", ":99")
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    return monkeypatch


def test_no_display_means_no_backend(linux):
    linux.delenv("DISPLAY")
    assert not tray_host.has_display()
    host = tray_host.find_linux_host()
    assert host.backend == "none" and "no display" in host.reason and host.hint == tray_host.NO_DISPLAY_HINT


def test_macos_and_windows_always_have_a_display(monkeypatch):
    monkeypatch.delenv("DISPLAY", raising=False)
    for platform in ("darwin", "win32"):
        monkeypatch.setattr(tray_host.sys, "platform", platform)
        assert tray_host.has_display()


def test_without_gtk_no_xorg_fallback_but_the_install_line(linux):
    linux.setattr(tray_host, "gtk_available", lambda: False)
    linux.setattr(tray_host, "xembed_tray_running", lambda: True)  # even with a tray to dock into
    host = tray_host.find_linux_host()
    assert host.backend == "none" and "PyGObject" in host.reason
    assert "sudo apt install libgirepository1.0-dev" in host.hint and "pip install 'scalpel-desktop[gtk]'" in host.hint


def test_a_watcher_means_appindicator_an_xembed_tray_means_gtk(linux):
    linux.setattr(tray_host, "sni_watcher_running", lambda: True)
    assert tray_host.find_linux_host().backend == "appindicator"
    linux.setattr(tray_host, "sni_watcher_running", lambda: False)
    linux.setattr(tray_host, "xembed_tray_running", lambda: True)
    assert tray_host.find_linux_host().backend == "gtk"


def test_stock_gnome_no_watcher_no_tray_is_detected(linux):
    host = tray_host.find_linux_host()
    assert host.backend == "none" and "no tray host" in host.reason and "AppIndicator extension" in host.hint


def test_no_session_bus_means_no_backend_even_with_a_tray_host(linux):
    """startx without dbus-x11, ``ssh -X``: both pystray backends would fail opening the bus."""
    linux.setattr(tray_host, "xembed_tray_running", lambda: True)
    linux.setattr(tray_host, "sni_watcher_running", lambda: True)
    linux.setattr(tray_host, "session_bus_problem", lambda: "DBUS_SESSION_BUS_ADDRESS unset; no dbus-launch")
    host = tray_host.find_linux_host()
    assert host.backend == "none" and host.reason.startswith("no D-Bus session bus")
    assert "no dbus-launch" in host.reason and "dbus-run-session -- scalpel tray" in host.hint


def _probe_bus(env: dict) -> subprocess.CompletedProcess:
    code = "from scalpel_desktop.desktop_env.tray_host import session_bus_problem as p; print(repr(p()))"
    return subprocess.run([*env.pop("_wrapper", []), sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=60)


def test_the_real_bus_probe_without_a_bus_and_inside_one(isolated_home, tmp_path):
    """The probe asks GLib as pystray does: unset address and no dbus-launch -> why; dbus-run-session -> None."""
    require(subprocess.run([sys.executable, "-c", "from gi.repository import Gio"], capture_output=True,
                           timeout=60).returncode == 0, "PyGObject (pip install 'scalpel-desktop[gtk]')")
    require(shutil.which("dbus-run-session") is not None, "dbus-run-session (Debian: dbus)")
    bin_dir = tmp_path / "bin"  # an empty PATH: no dbus-launch to autolaunch a bus
    bin_dir.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "DBUS_SESSION_BUS_ADDRESS"}
    env.update({"PATH": str(bin_dir), "DISPLAY": ":7391"})  # $XDG_RUNTIME_DIR/bus absent: the test's own dir
    cp = _probe_bus(dict(env))
    assert cp.returncode == 0 and "DBUS_SESSION_BUS_ADDRESS unset" in cp.stdout, cp.stdout + cp.stderr
    env["PATH"] = os.environ.get("PATH", "")
    cp = _probe_bus({**env, "_wrapper": ["dbus-run-session", "--"]})
    assert cp.returncode == 0 and cp.stdout.strip() == "None", cp.stdout + cp.stderr


def test_wayland_only_needs_a_watcher(linux):
    linux.delenv("DISPLAY")
    linux.setenv("WAYLAND_DISPLAY", "wayland-0")
    linux.setattr(tray_host, "xembed_tray_running", lambda: True)  # not asked without an X display
    assert tray_host.find_linux_host().backend == "none"
    linux.setattr(tray_host, "sni_watcher_running", lambda: True)
    assert tray_host.find_linux_host().backend == "appindicator"


def test_xembed_probe_without_an_x_server(monkeypatch):
    monkeypatch.setenv("DISPLAY", ":7391")  # nothing there
    assert tray_host.xembed_tray_running() is None
