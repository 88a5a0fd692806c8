"""Whether this session can show a tray with a menu, and which backend pystray should use."""

from __future__ import annotations

from scalpel_desktop.desktop_env import tray_host


def test_no_display_means_no_backend(monkeypatch):
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.setattr(tray_host.sys, "platform", "linux")
    assert not tray_host.has_display()
    name, warning = tray_host.linux_backend_name()
    assert name == "none" and "no display" in warning


def test_macos_and_windows_always_have_a_display(monkeypatch):
    monkeypatch.delenv("DISPLAY", raising=False)
    for platform in ("darwin", "win32"):
        monkeypatch.setattr(tray_host.sys, "platform", platform)
        assert tray_host.has_display()


def test_without_gtk_x11_falls_back_to_xorg_with_the_hint(monkeypatch):
    monkeypatch.setenv("DISPLAY", ":99")
    monkeypatch.setattr(tray_host, "gtk_available", lambda: False)
    name, warning = tray_host.linux_backend_name()
    assert name == "xorg" and "pip install 'scalpel-desktop[gtk]'" in warning


def test_without_gtk_wayland_only_has_no_backend(monkeypatch):
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.setenv("WAYLAND_DISPLAY", "wayland-0")
    monkeypatch.setattr(tray_host, "gtk_available", lambda: False)
    assert tray_host.linux_backend_name() == ("none", tray_host.GTK_HINT)


def test_gtk_with_a_watcher_prefers_appindicator(monkeypatch):
    monkeypatch.setenv("DISPLAY", ":99")
    monkeypatch.setattr(tray_host, "gtk_available", lambda: True)
    monkeypatch.setattr(tray_host, "appindicator_available", lambda: True)
    for watcher, expected in ((True, "appindicator"), (False, "gtk")):
        monkeypatch.setattr(tray_host, "sni_watcher_running", lambda w=watcher: w)
        assert tray_host.linux_backend_name()[0] == expected
