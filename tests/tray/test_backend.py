"""tray/backend.py: which pystray backend is imported, and a clear answer when there is none.

Run without a desktop: pystray's own dummy backend (tests/conftest.py sets
PYSTRAY_BACKEND=dummy), pystray really failing to load a backend, and the
host finder (desktop_env/tray_host.py, tested on its own) replaced where the
test is about what ``choose`` does with its answer.
"""

from __future__ import annotations

import os
import sys
import types

import pytest

from scalpel_desktop.desktop_env.tray_host import TrayHost
from scalpel_desktop.tray import backend


def _fresh_pystray(monkeypatch):
    """Forget the imported pystray (restored after the test), so ``choose`` really imports it again."""
    for mod in [m for m in sys.modules if m == "pystray" or m.startswith("pystray.")]:
        monkeypatch.delitem(sys.modules, mod)


def _no_host_lookup(monkeypatch):
    def refuse():
        raise AssertionError("the tray host was looked for although the backend was named")

    monkeypatch.setattr(backend, "find_linux_host", refuse)


def test_the_dummy_backend_is_named_dummy(monkeypatch):
    """Regression: its Icon is pystray._base's, and the choice used to say "base"."""
    _no_host_lookup(monkeypatch)
    _fresh_pystray(monkeypatch)
    choice = backend.choose()
    assert choice.name == "dummy" and choice.reason == "" and choice.hint == ""
    assert choice.pystray is sys.modules["pystray"] and hasattr(choice.pystray, "Icon")


def test_a_backend_the_user_named_is_respected(monkeypatch):
    _no_host_lookup(monkeypatch)
    monkeypatch.setattr(backend.sys, "platform", "linux")
    backend.choose()
    assert os.environ["PYSTRAY_BACKEND"] == "dummy"


def test_backend_choice_without_display(monkeypatch):
    monkeypatch.delenv("PYSTRAY_BACKEND", raising=False)
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.setattr(backend.sys, "platform", "linux")
    choice = backend.choose()
    assert choice.pystray is None and choice.name == "none"
    assert "no display" in choice.reason and "desktop session" in choice.hint
    assert "PYSTRAY_BACKEND" not in os.environ  # nothing chosen, nothing set


def test_no_tray_host_is_passed_on_with_its_reason_and_hint(monkeypatch):
    monkeypatch.delenv("PYSTRAY_BACKEND", raising=False)
    monkeypatch.setattr(backend.sys, "platform", "linux")
    monkeypatch.setattr(backend, "find_linux_host", lambda: TrayHost("none", "no tray host here", "install one"))
    assert backend.choose() == backend.BackendChoice(None, "none", "no tray host here", "install one")


def test_the_host_found_is_the_backend_pystray_is_told_to_load(monkeypatch):
    monkeypatch.delenv("PYSTRAY_BACKEND", raising=False)
    monkeypatch.setattr(backend.sys, "platform", "linux")
    monkeypatch.setattr(backend, "find_linux_host", lambda: TrayHost("gtk"))

    class Icon:  # what pystray's gtk backend exports (a real one needs a display and GTK)
        __module__ = "pystray._gtk"

    fake = types.ModuleType("pystray")
    fake.Icon = Icon
    monkeypatch.setitem(sys.modules, "pystray", fake)
    choice = backend.choose()
    assert choice.pystray is fake and choice.name == "gtk" and os.environ["PYSTRAY_BACKEND"] == "gtk"


def test_off_linux_the_host_is_not_looked_for(monkeypatch):
    monkeypatch.delenv("PYSTRAY_BACKEND", raising=False)
    monkeypatch.setattr(backend.sys, "platform", "darwin")
    _no_host_lookup(monkeypatch)

    class Icon:
        __module__ = "pystray._darwin"

    fake = types.ModuleType("pystray")
    fake.Icon = Icon
    monkeypatch.setitem(sys.modules, "pystray", fake)
    assert backend.choose().name == "darwin"


def test_an_unknown_backend_name_is_a_reason_not_an_exception(monkeypatch):
    _fresh_pystray(monkeypatch)
    monkeypatch.setenv("PYSTRAY_BACKEND", "nonesuch")
    choice = backend.choose()
    assert choice.pystray is None and choice.name == "none"
    assert choice.reason.startswith("pystray could not load a tray backend (ImportError: unknown backend")
    assert "scalpel doctor" in choice.hint


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the xorg backend is Linux's")
def test_an_x_backend_without_a_display_is_a_reason_not_an_exception(monkeypatch):
    """``import pystray`` raises Xlib's DisplayNameError here, which is no ImportError."""
    pytest.importorskip("Xlib")
    _fresh_pystray(monkeypatch)
    monkeypatch.setenv("PYSTRAY_BACKEND", "xorg")
    monkeypatch.delenv("DISPLAY", raising=False)
    choice = backend.choose()
    assert choice.pystray is None and choice.name == "none"
    assert "DisplayNameError" in choice.reason
