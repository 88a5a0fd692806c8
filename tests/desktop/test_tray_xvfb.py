"""A REAL tray: Xvfb + trayer as the tray host + the gtk backend, clicked with xdotool.

The proxy's state is checked with `scalpel status --json` from a separate
process. The menu screenshot is taken on every run and copied to
docs/screenshots/tray-menu.png only when that file is missing or the run has
``--snapshot-update`` (it shows a live port, so it would change every run).
Needs: xvfb trayer xdotool dbus imagemagick (Debian), PyGObject<3.51 with
gir1.2-gtk-3.0 (pip extra [gtk]). Skips without them (fails under CI=true).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest

from tests.support import REPO, free_port, require

pytestmark = pytest.mark.desktop
SCREENSHOT = REPO / "docs" / "screenshots" / "tray-menu.png"


def _have_gi() -> bool:
    cp = subprocess.run([sys.executable, "-c", "import gi; gi.require_version('Gtk', '3.0'); from gi.repository import Gtk"],
                        capture_output=True, timeout=60, env={k: v for k, v in os.environ.items() if k != "DISPLAY"})
    return cp.returncode == 0


def _start_xvfb() -> tuple[subprocess.Popen, str]:
    r, w = os.pipe()
    proc = subprocess.Popen(["Xvfb", "-displayfd", str(w), "-screen", "0", "800x600x24", "-nolisten", "tcp"],
                            pass_fds=(w,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(w)
    buf = b""
    deadline = time.monotonic() + 30
    while not buf.endswith(b"\n") and time.monotonic() < deadline:  # read up to the newline, then close
        chunk = os.read(r, 1)
        if not chunk:
            break
        buf += chunk
    os.close(r)
    assert buf.strip().isdigit(), f"Xvfb gave no display number ({buf!r})"
    return proc, ":" + buf.decode().strip()


def _stop(proc: subprocess.Popen | None, group: bool = False) -> None:
    if proc is None or proc.poll() is not None:
        return
    try:
        if group:
            os.killpg(proc.pid, signal.SIGTERM)
        else:
            proc.terminate()
        proc.wait(10)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        try:
            os.killpg(proc.pid, signal.SIGKILL) if group else proc.kill()
        except ProcessLookupError:
            pass
        proc.wait(10)


def _status(env) -> dict:
    cp = subprocess.run([sys.executable, "-m", "scalpel_desktop", "status", "--json"], capture_output=True, text=True,
                        env=env, timeout=60)
    return json.loads(cp.stdout)


def _wait(pred, what: str, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = pred()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def _xdo(env, *args: str) -> str:
    return subprocess.run(["xdotool", *args], capture_output=True, text=True, env=env, timeout=30).stdout


def _icon_center(env) -> tuple[int, int] | None:
    """The tray icon: trayer's panel window ("panel"), which sizes itself to the icon it embeds."""
    for wid in _xdo(env, "search", "--name", "^panel$").split():
        geo = _xdo(env, "getwindowgeometry", wid)
        pos = re.search(r"Position: (-?\d+),(-?\d+)", geo)
        size = re.search(r"Geometry: (\d+)x(\d+)", geo)
        if pos and size and int(size.group(1)) > 20:
            return int(pos.group(1)) + int(size.group(1)) // 2, int(pos.group(2)) + int(size.group(2)) // 2
    return None


def _no_backend_env() -> dict:
    return {k: v for k, v in os.environ.items() if k != "PYSTRAY_BACKEND"}


def _require_desktop_tools() -> None:
    for tool in ("Xvfb", "trayer", "xdotool", "dbus-run-session", "import"):
        require(shutil.which(tool) is not None, f"{tool} (Debian: xvfb trayer xdotool dbus imagemagick)")
    require(_have_gi(), "PyGObject with GTK 3 (pip install 'scalpel-desktop[gtk]'; gir1.2-gtk-3.0)")


def _headless_scalpel(env: dict, port: int, bus: bool = True) -> str:
    """Run `scalpel` (no command) where no tray can be shown: the proxy must answer, and stderr must be
    exactly one line; `scalpel stop` ends it. Returns that line. ``bus=False``: no session bus at all."""
    wrapper = ["dbus-run-session", "--"] if bus else []
    proc = subprocess.Popen([*wrapper, sys.executable, "-m", "scalpel_desktop"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        _wait(lambda: _status(env).get("running"), "the headless proxy")
        assert _status(env)["port"] == port
        stop = subprocess.run([sys.executable, "-m", "scalpel_desktop", "stop"], capture_output=True, text=True,
                              env=env, timeout=60)
        assert stop.returncode == 0, stop.stderr
        out, err = proc.communicate(timeout=30)
    finally:
        _stop(proc, group=True)
    assert proc.returncode == 0, err
    # dbus-daemon (the test's session bus, not scalpel) may complain about fd limits when run as root
    lines = [line for line in err.splitlines() if not line.startswith("dbus-daemon[")]
    assert len(lines) == 1 and "Traceback" not in err and "Failed to dock" not in err, err
    assert f"http://127.0.0.1:{port}" in lines[0] and "listening on" in out
    return lines[0]


def test_no_tray_host_says_so_in_one_line_and_serves(isolated_home, tmp_path):
    """Stock GNOME has no StatusNotifier watcher and no XEmbed tray: here, Xvfb without trayer."""
    _require_desktop_tools()
    from scalpel_desktop.paths import dirs

    port = free_port()
    dirs().config.mkdir(parents=True, exist_ok=True)
    dirs().config_file.write_text(json.dumps({"port": port}))
    xvfb, display = _start_xvfb()
    try:
        line = _headless_scalpel({**_no_backend_env(), "DISPLAY": display, "NO_AT_BRIDGE": "1"}, port)
    finally:
        _stop(xvfb)
    assert line.startswith("scalpel: no tray: no tray host on this desktop") and "AppIndicator extension" in line


def test_a_tray_host_without_a_session_bus_says_so_in_one_line_and_serves(isolated_home, tmp_path):
    """startx without dbus-x11, ``ssh -X``: trayer runs, but no bus and no dbus-launch to start one.
    pystray's gtk backend would print a traceback and hang with nothing on the port."""
    _require_desktop_tools()
    from scalpel_desktop.paths import dirs

    port = free_port()
    dirs().config.mkdir(parents=True, exist_ok=True)
    dirs().config_file.write_text(json.dumps({"port": port}))
    xvfb, display = _start_xvfb()
    env = {k: v for k, v in _no_backend_env().items() if k != "DBUS_SESSION_BUS_ADDRESS"}
    env.update({"DISPLAY": display, "NO_AT_BRIDGE": "1"})
    trayer = None
    try:
        trayer = subprocess.Popen(["trayer", "--edge", "top", "--align", "right", "--widthtype", "request", "--height", "32",
                                   "--SetDockType", "true", "--transparent", "false"],
                                  env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _wait(lambda: _xdo(env, "search", "--class", "trayer").strip(), "trayer")
        # PATH: this Python's folder only, so no dbus-launch can autolaunch a bus, whatever this machine has
        line = _headless_scalpel({**env, "PATH": os.path.dirname(sys.executable)}, port, bus=False)
    finally:
        _stop(trayer)
        _stop(xvfb)
    assert line.startswith("scalpel: no tray: no D-Bus session bus") and "DBUS_SESSION_BUS_ADDRESS unset" in line
    assert "dbus-run-session -- scalpel tray" in line


def test_without_pygobject_says_how_to_get_the_tray_in_one_line(isolated_home, tmp_path):
    """No [gtk] extra: no xorg icon without a menu, no "Failed to dock icon" tracebacks, one line instead."""
    _require_desktop_tools()
    from scalpel_desktop.paths import dirs

    port = free_port()
    dirs().config.mkdir(parents=True, exist_ok=True)
    dirs().config_file.write_text(json.dumps({"port": port}))
    fake = tmp_path / "no-gi"
    (fake / "gi").mkdir(parents=True)
    (fake / "gi" / "__init__.py").write_text("raise ImportError('No module named gi (hidden by the test)')\n")
    xvfb, display = _start_xvfb()
    try:
        env = {**_no_backend_env(), "DISPLAY": display, "NO_AT_BRIDGE": "1", "PYTHONPATH": str(fake)}
        line = _headless_scalpel(env, port)
    finally:
        _stop(xvfb)
    assert line.startswith("scalpel: no tray: PyGObject (GTK 3) is missing")
    assert "sudo apt install libgirepository1.0-dev" in line and "pip install 'scalpel-desktop[gtk]'" in line


def test_real_tray_menu_under_xvfb(isolated_home, tmp_path, request):
    _require_desktop_tools()
    from scalpel_desktop.paths import dirs

    port = free_port()
    dirs().config.mkdir(parents=True, exist_ok=True)
    dirs().config_file.write_text(json.dumps({"port": port}))
    xvfb, display = _start_xvfb()
    trayer = tray = None
    # No PYSTRAY_BACKEND: scalpel finds the backend itself (trayer's XEmbed tray -> gtk), as a user's would.
    env = {**_no_backend_env(), "DISPLAY": display, "NO_AT_BRIDGE": "1"}
    try:
        trayer = subprocess.Popen(["trayer", "--edge", "top", "--align", "right", "--widthtype", "request", "--height", "32",
                                   "--SetDockType", "true", "--transparent", "false"],
                                  env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _wait(lambda: _xdo(env, "search", "--class", "trayer").strip(), "trayer")
        tray = subprocess.Popen(["dbus-run-session", "--", sys.executable, "-m", "scalpel_desktop", "tray"], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
        _wait(lambda: _status(env).get("running"), "the tray's proxy")
        assert _status(env)["port"] == port and _status(env)["paused"] is False
        x, y = _wait(lambda: _icon_center(env), "the icon embedded in trayer")

        # Left click: the default item (Pause).
        _xdo(env, "mousemove", str(x), str(y), "click", "1")
        _wait(lambda: _status(env).get("paused") is True, "paused after a left click")

        # Right click opens the menu; Down x3 = Resume, On, Tier 1.
        _xdo(env, "mousemove", str(x), str(y), "click", "3")
        time.sleep(1.0)
        shot = tmp_path / "tray-menu.png"
        subprocess.run(["import", "-window", "root", str(shot)], env=env, check=True, timeout=60)
        _xdo(env, "key", "Down", "Down", "Down", "Return")
        _wait(lambda: _status(env).get("tier") == 1, "tier 1 picked from the menu")
        assert _status(env)["paused"] is True

        # First enabled item after a fresh open is Resume.
        _xdo(env, "mousemove", str(x), str(y), "click", "3")
        time.sleep(0.8)
        _xdo(env, "key", "Down", "Return")
        _wait(lambda: _status(env).get("paused") is False, "resumed from the menu")

        # Up from the top wraps to the last item: Quit. The tray's own proxy stops with it.
        _xdo(env, "mousemove", str(x), str(y), "click", "3")
        time.sleep(0.8)
        _xdo(env, "key", "Up", "Return")
        assert tray.wait(30) == 0
        assert _status(env)["running"] is False

        # `scalpel stop` while the tray owns the proxy: the tray quits with it.
        tray = subprocess.Popen(["dbus-run-session", "--", sys.executable, "-m", "scalpel_desktop", "tray"], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
        pid = _wait(lambda: _status(env).get("pid"), "the second tray's proxy")
        stop = subprocess.run([sys.executable, "-m", "scalpel_desktop", "stop"], capture_output=True, text=True,
                              env=env, timeout=60)
        assert stop.returncode == 0 and stop.stdout == f"scalpel stopped (pid {pid})\n", stop.stdout + stop.stderr
        assert tray.wait(30) == 0
    finally:
        _stop(tray, group=True)
        _stop(trayer)
        _stop(xvfb)
    assert shot.stat().st_size > 1000
    if request.config.getoption("--snapshot-update", default=False) or not SCREENSHOT.exists():
        SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, SCREENSHOT)
