"""Import pystray with the backend ``desktop_env.tray_host`` picks, and say clearly when there is none.

``import pystray`` with no DISPLAY raises ``Xlib.error.DisplayNameError`` (not
ImportError), so the import is guarded by a catch-all. With no backend at all
the caller runs headless.

``PYSTRAY_BACKEND`` set by the user (or the tests: ``dummy``) is respected.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import Any

from scalpel_desktop.desktop_env.tray_host import linux_backend_name


@dataclass
class BackendChoice:
    pystray: Any | None  # the imported module, or None (run headless)
    name: str  # gtk | appindicator | xorg | darwin | win32 | dummy | none
    warning: str = ""


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
