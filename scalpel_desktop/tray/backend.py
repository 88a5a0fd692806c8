"""Import pystray with the backend ``desktop_env.tray_host`` picks, and say clearly when there is none.

``import pystray`` with no DISPLAY raises ``Xlib.error.DisplayNameError`` (not
ImportError), so the import is guarded by a catch-all. With no backend the
choice says why and how to get one, and the caller runs headless.

``PYSTRAY_BACKEND`` set by the user (or the tests: ``dummy``) is respected.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import Any

from scalpel_desktop.desktop_env.tray_host import find_linux_host


@dataclass
class BackendChoice:
    pystray: Any | None  # the imported module, or None (run headless)
    name: str  # gtk | appindicator | xorg | darwin | win32 | dummy | none
    reason: str = ""  # with no backend: why, in a few words
    hint: str = ""  # with no backend: how to get a tray here


def choose() -> BackendChoice:
    """Import pystray with the best backend here; never raises."""
    name = os.environ.get("PYSTRAY_BACKEND", "")
    if not name and sys.platform.startswith("linux"):
        host = find_linux_host()
        if host.backend == "none":
            return BackendChoice(None, "none", host.reason, host.hint)
        name = host.backend
        os.environ["PYSTRAY_BACKEND"] = name
    try:
        import pystray
    except Exception as e:  # noqa: BLE001 - Xlib.error.DisplayNameError is not an ImportError
        return BackendChoice(None, "none", f"pystray could not load a tray backend ({type(e).__name__}: {e})",
                             "`scalpel doctor` checks the tray's requirements")
    actual = getattr(getattr(pystray.Icon, "__module__", ""), "rsplit", lambda *_: [""])(".", 1)[-1].lstrip("_")
    # the dummy backend's Icon is pystray._base's own: its module says "base", not "dummy"
    return BackendChoice(pystray, actual if actual in BACKENDS else name or sys.platform)


BACKENDS = ("gtk", "appindicator", "xorg", "darwin", "win32", "dummy")  # pystray's, by their module names
