"""``run_tray()``: the tray on the main thread, the proxy in its worker thread.

Who owns the proxy:

- a proxy already answers (the login service of autopilot, or ``scalpel
  start``): the tray *attaches* and acts through the control API;
- else the tray starts its own ``Runtime`` (which serves from its own thread).

``scalpel stop`` while the tray owns the proxy: the proxy stops through the
control API, and the tray quits with it (the same Quit as the menu's), so
``stop`` sees the process end at once and no tray is left with nothing to
control. A tray attached to another proxy shows it as off.

Quit (SPEC section 8: never leave Claude Code pointing at a dead port):
with autopilot on, the proxy belongs to the login service, so Quit closes
the tray and the service keeps serving. A proxy the tray owns is stopped,
and then ``autopilot.release_if_unserved()`` restores Claude Code's settings
if they still point at scalpel with no service to serve them.

No tray backend (no display, no PyGObject and no X): ``run_tray()`` returns
``NoTrayBackend(reason)`` and the CLI runs the proxy in the foreground
instead. The tray never imports the CLI.
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from scalpel_desktop.tray.dispatcher import Dispatcher
from scalpel_desktop.tray.menu import build_pystray_menu

log = logging.getLogger("scalpel.tray")
REFRESH_S = 2.0


class TrayLink:
    """The tray's way to the proxy: its own Runtime, or the control API of another."""

    def __init__(self, runtime_factory=None):
        self.runtime = None
        self._runtime_factory = runtime_factory or _default_runtime
        #: Called (from a watcher thread) when the tray's own proxy was stopped by
        #: someone else: ``scalpel stop`` through the control API.
        self.on_stopped_elsewhere = None

    # -- ownership ------------------------------------------------------------
    def _client(self):
        from scalpel_desktop.control_client import ControlClient

        return ControlClient.discover(timeout=3.0)

    def attach_or_start(self) -> str:
        """'attached' to a running proxy, or 'owned' after starting one."""
        from scalpel_desktop.control_client import ControlError

        try:
            self._client().health()
            return "attached"
        except ControlError:
            pass
        self.start_own()
        return "owned"

    def start_own(self) -> None:
        rt = self._runtime_factory()
        rt.start()
        self.runtime = rt
        threading.Thread(target=self._watch, args=(rt,), name="scalpel-tray-watch", daemon=True).start()

    def _watch(self, rt) -> None:
        """Wait for ``rt`` to stop; if the tray did not stop it itself, tell the tray."""
        rt.wait()
        if self.runtime is rt:  # stop_own() forgets the runtime before stopping it
            self.runtime = None
            log.info("the tray's proxy was stopped from outside (scalpel stop)")
            callback = self.on_stopped_elsewhere
            if callback is not None:
                try:
                    callback()
                except Exception:  # noqa: BLE001
                    log.exception("reacting to the proxy's stop failed")

    def stop_own(self) -> None:
        rt, self.runtime = self.runtime, None
        if rt is not None:
            rt.stop(timeout=5.0)

    @property
    def owns_proxy(self) -> bool:
        return self.runtime is not None and self.runtime.running

    # -- ProxyLink -------------------------------------------------------------
    def status(self) -> dict | None:
        from scalpel_desktop.control_client import ControlError

        if self.owns_proxy:
            snap = dict(self.runtime.status())
        else:
            try:
                snap = self._client().status()
            except ControlError:
                return None
            snap.setdefault("running", True)
        # "Today" (requests_today, saved_*_today) is in the snapshot: the proxy's status reads it
        # from the ledger since local midnight (store.ledger_queries.today_savings).
        if "miss_usd_today" not in snap:  # a proxy whose status has no misses: read them here
            snap.update(misses_today())
        return snap

    def set_settings(self, values: dict[str, Any]) -> Any:
        if self.owns_proxy:
            return self.runtime.set_settings(values)
        return self._client().set_settings(values)

    def autopilot_enabled(self) -> bool:
        from scalpel_desktop.service import autopilot

        return autopilot.is_on()

    def autopilot_on(self) -> None:
        """Hand the port over to the login service: stop our proxy, turn autopilot on."""
        from scalpel_desktop.service import autopilot

        owned = self.owns_proxy
        if owned:
            self.stop_own()
        try:
            autopilot.on()
        except Exception:
            if owned:
                self.start_own()  # back as we were
            raise

    def autopilot_off(self) -> None:
        """Settings restored and service removed; the tray then runs its own proxy."""
        from scalpel_desktop.service import autopilot

        autopilot.off()
        if not self.owns_proxy:
            self.start_own()

    def quit(self) -> None:
        self.stop_own()
        from scalpel_desktop.service import autopilot

        try:
            if autopilot.release_if_unserved():
                log.warning("Claude Code's settings pointed at a proxy nobody serves; restored them")
        except Exception:  # noqa: BLE001
            log.exception("could not check Claude Code's settings on quit")


def misses_today(db=None, now: float | None = None) -> dict[str, Any]:
    """Today's cache misses for the tooltip: ``{"misses_today", "miss_usd_today"}`` from the ledger
    (store/misses.py), both None when it cannot be read; a short SQLite timeout. On the caller's
    thread: the refresher and the command worker call ``status()`` (and ``TrayApp`` once before the
    icon shows), never a menu callback on the GUI thread."""
    from scalpel_desktop.store.misses import today_misses_or_unknown

    got, _why = today_misses_or_unknown(db, now)
    return {"misses_today": got[0] if got else None, "miss_usd_today": got[1] if got else None}


def _default_runtime():
    from scalpel_desktop.runtime import Runtime

    return Runtime()


class TrayApp:
    """The pystray Icon, the dispatcher and a refresher thread, wired together."""

    def __init__(self, pystray: Any, link: TrayLink, dispatcher: Dispatcher | None = None):
        from scalpel_desktop.desktop_env.icons import icon_image

        self.pystray = pystray
        self.link = link
        self._icon_image = icon_image
        self._stop = threading.Event()
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="scalpel-tray-cmd")
        self.dispatcher = dispatcher or Dispatcher(link, on_quit=self._quit, on_change=self._apply)
        link.on_stopped_elsewhere = self._quit  # `scalpel stop` ends the tray with its proxy
        self.dispatcher.refresh()
        state = self.dispatcher.state
        menu = build_pystray_menu(pystray, lambda: self.dispatcher.state, self.emit)
        self.icon = pystray.Icon("scalpel-desktop", icon_image(state.icon), state.tooltip(), menu)
        self._shown = state.icon

    def emit(self, command: str) -> None:
        """Menu callbacks arrive on the GUI thread: run the command on the worker."""
        self._worker.submit(self.dispatcher.dispatch, command)

    def _apply(self) -> None:
        s = self.dispatcher.state
        if s.icon != self._shown:
            self.icon.icon = self._icon_image(s.icon)
            self._shown = s.icon
        self.icon.title = s.tooltip()
        self.icon.update_menu()

    def _refresher(self) -> None:
        while not self._stop.wait(REFRESH_S):
            try:
                self.dispatcher.refresh()
                self._apply()
            except Exception:  # noqa: BLE001
                log.exception("tray refresh failed")

    def _quit(self) -> None:
        self._stop.set()
        try:
            self.link.quit()
        finally:
            self.icon.stop()

    def run(self) -> None:
        def setup(icon):
            icon.visible = True
            threading.Thread(target=self._refresher, name="scalpel-tray-refresh", daemon=True).start()

        try:
            self.icon.run(setup=setup)
        except Exception as e:  # noqa: BLE001 - GLib.Error on exit without a notification daemon
            if not self._stop.is_set():
                raise
            log.debug("tray exit: %s", e)
        finally:
            self._stop.set()
            self._worker.shutdown(wait=True, cancel_futures=False)


@dataclass(frozen=True)
class NoTrayBackend:
    """``run_tray()``'s answer when this session can show no tray: why, in one line.

    A result, not an error: the caller (the CLI) decides what runs instead.
    """

    reason: str
    hint: str = ""  # how to get a tray here


class TrayStartError(Exception):
    """The tray could not start its own proxy (already running, port taken, ...)."""


def run_tray() -> int | NoTrayBackend:
    """Show the tray until Quit (exit status 0), or say that no tray can be shown here."""
    from scalpel_desktop.tray import backend

    choice = backend.choose()
    if choice.pystray is None:
        return NoTrayBackend(choice.reason or "no tray backend available", choice.hint)
    logging.basicConfig(level=logging.WARNING, format="scalpel: %(levelname)s: %(message)s")
    link = TrayLink()
    try:
        mode = link.attach_or_start()
    except Exception as e:  # noqa: BLE001 - AlreadyRunning, PortInUse, ...
        raise TrayStartError(f"cannot start the proxy for the tray: {e}") from None
    log.info("tray (%s backend), proxy %s", choice.name, mode)
    app = TrayApp(choice.pystray, link)
    try:
        app.run()
    finally:
        if link.owns_proxy:
            link.quit()
    return 0
