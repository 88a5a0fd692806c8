"""Tray tests: pystray's dummy backend (PYSTRAY_BACKEND=dummy from tests/conftest.py)."""

from __future__ import annotations

import os
import threading
import types

import pytest

from tests.service.conftest import process_service  # noqa: F401 - fixture


@pytest.fixture
def pystray_dummy():
    """pystray with a runnable dummy Icon: _run() waits on an Event that _stop() sets.

    The plain dummy Icon's run() never returns (DESKTOP-NOTES), so it is never called.
    """
    import pystray

    assert os.environ.get("PYSTRAY_BACKEND") == "dummy" and pystray.Icon.__module__ == "pystray._base"

    class RunnableIcon(pystray.Icon):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.ready = threading.Event()
            self._done = threading.Event()

        def _run(self):
            self._mark_ready()
            self.ready.set()
            self._done.wait(60)

        def _stop(self):
            self._done.set()

        # What a real backend does natively; the dummy has no native side.
        def _update_menu(self):
            self.menu_updates = getattr(self, "menu_updates", 0) + 1

        def _update_icon(self):
            pass

        def _update_title(self):
            pass

        def _show(self):
            pass

        def _hide(self):
            pass

    return types.SimpleNamespace(Icon=RunnableIcon, Menu=pystray.Menu, MenuItem=pystray.MenuItem)


@pytest.fixture
def own_runtime_link(isolated_home):
    """A TrayLink whose own Runtime binds a free port."""
    from scalpel_desktop.runtime import Runtime
    from scalpel_desktop.tray.app import TrayLink

    link = TrayLink(runtime_factory=lambda: Runtime(port=0))
    yield link
    link.stop_own()
