"""``scalpel doctor``'s checks: everything a user could have wrong, and how to fix each.

The advice names CLI commands, so the checks live with the command that
renders them (``cli/cmd_doctor.py``); the facts come from service/, config and
``desktop_env`` (the same tray test the tray itself uses).

Each check returns a ``Check(name, status, detail, fix)``; status is one of
``ok``, ``warn``, ``fail``, ``info``. Any ``fail`` makes the command exit 1.
Nothing here changes anything.
"""

from __future__ import annotations

import os
import platform
import shutil
import socket
import subprocess
import sys
from dataclasses import asdict, dataclass

from scalpel_desktop import __version__


@dataclass
class Check:
    name: str
    status: str  # ok | warn | fail | info
    detail: str
    fix: str = ""

    def as_dict(self) -> dict:
        return asdict(self)


def _running_port() -> int | None:
    """The port of a proxy started by hand (`scalpel start --port N`), from its runtime file."""
    try:
        from scalpel_desktop.control_client import runtime_info

        info = runtime_info() or {}
        return int(info["port"]) if info.get("port") else None
    except (ImportError, OSError, ValueError, KeyError, TypeError):
        return None


def _port_free(port: int) -> bool:
    """Can the proxy bind here? With SO_REUSEADDR, as aiohttp binds: sockets in TIME_WAIT
    (a proxy just stopped) do not count as taken, only a program that holds or listens."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        if hasattr(socket, "SO_REUSEADDR") and sys.platform != "win32":  # on Windows it would allow a double bind
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", port))
        return True
    except OSError:
        return False
    finally:
        s.close()


def _answers(url: str) -> bool | None:
    """Does anything listen at a loopback URL? None for a URL that is not loopback (not probed)."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return None
    if host not in ("127.0.0.1", "localhost", "::1"):
        return None
    try:
        with socket.create_connection(("::1" if host == "::1" else "127.0.0.1", port), timeout=1.0):
            return True
    except OSError:
        return False


def check_all(claude_version_timeout: float = 10.0) -> list[Check]:
    from scalpel_desktop.config import Config, ConfigError
    from scalpel_desktop.paths import dirs, home_relative
    from scalpel_desktop.service import autopilot, hooks
    from scalpel_desktop.service.autostart import choose_backend
    from scalpel_desktop.service.probe import base_url, health, is_scalpel_url
    from scalpel_desktop.service.settings_file import ClaudeSettings, get_path

    out: list[Check] = []
    try:
        cfg = Config.load()
        out.append(Check("config", "ok", home_relative(cfg.path)))
    except ConfigError as e:
        out.append(Check("config", "fail", str(e), f"fix or remove {home_relative(dirs().config_file)}"))
        cfg = Config({})
    state = autopilot.read_state()
    port = int(state.get("port") or _running_port() or cfg["port"])
    answer = health(port)
    if answer:
        out.append(Check("proxy", "ok", f"answering on {base_url(port)} (pid {answer.get('pid')}, version {answer.get('version')})"))
        if answer.get("version") != __version__:
            out.append(Check("proxy version", "warn", f"the running proxy is {answer.get('version')}, this command is {__version__}",
                             "restart it: `scalpel stop && scalpel start` (or `scalpel autopilot on` again)"))
        out.extend(_running_proxy_checks(port))
    else:
        free = _port_free(port)
        out.append(Check("proxy", "info" if not state.get("enabled") else "fail",
                         f"not answering on {base_url(port)}",
                         "start it: `scalpel start` (foreground), `scalpel tray`, or `scalpel autopilot on`"))
        out.append(Check("port", "ok" if free else "fail",
                         f"127.0.0.1:{port} is {'free' if free else 'taken by another program'}",
                         "" if free else "free the port or choose another: `scalpel config set port N`"))
        from scalpel_desktop.cli.degraded import ledger_check_offline

        out.append(Check(*ledger_check_offline()))
    out.extend(miss_pattern_checks())
    settings = ClaudeSettings()
    where = home_relative(settings.path)
    url = None
    try:
        doc = settings.load()
        url = get_path(doc, ("env", "ANTHROPIC_BASE_URL"))
        points = isinstance(url, str) and is_scalpel_url(url, port)
        if points and not answer:
            out.append(Check("Claude Code", "fail", f"{where} points at {url}, where nothing answers: Claude Code cannot reach the API",
                             "`scalpel autopilot on` (start the service) or `scalpel autopilot off` (restore the setting)"))
        elif points:
            out.append(Check("Claude Code", "ok", f"{where} routes through scalpel ({url})"))
        elif url:
            out.append(Check("Claude Code", "info", f"{where} routes to {url} (not scalpel)",
                             "`scalpel autopilot on` makes that URL scalpel's upstream and routes through scalpel"))
        elif os.environ.get("ANTHROPIC_BASE_URL"):
            out.append(Check("Claude Code", "info", f"{where} does not set ANTHROPIC_BASE_URL: Claude Code uses this shell's (see environment)"))
        else:
            out.append(Check("Claude Code", "info", f"{where} does not set ANTHROPIC_BASE_URL (direct to the API)",
                             "`scalpel autopilot on`, or `export ANTHROPIC_BASE_URL=http://127.0.0.1:%d` per shell" % port))
    except Exception as e:  # noqa: BLE001 - SettingsError
        out.append(Check("Claude Code", "fail", str(e), f"fix the JSON in {where}; scalpel will not edit it until it parses"))
    out.extend(_shell_base_url(port, answer is not None, url, where))
    backend = choose_backend()
    installed = backend.enabled()
    if state.get("enabled"):
        out.append(Check("login service", "ok" if installed else "fail",
                         f"{backend.name}: {'installed' if installed else 'missing'}",
                         "" if installed else "`scalpel autopilot on` reinstalls it"))
    else:
        out.append(Check("login service", "warn" if installed else "info",
                         f"{backend.name}: {'installed while autopilot is off' if installed else 'not installed (autopilot off)'}",
                         "`scalpel autopilot off` removes it" if installed else "`scalpel autopilot on` installs it"))
    hs = hooks.status(settings)
    n = sum(hs.installed.values())
    if n == len(hs.installed):
        out.append(Check("hooks", "ok", f"{', '.join(hs.installed)} installed in {where}"))
    elif n:
        missing = ", ".join(k for k, v in hs.installed.items() if not v)
        out.append(Check("hooks", "warn", f"partly installed (missing: {missing})", "`scalpel hooks install`"))
    else:
        out.append(Check("hooks", "info", "not installed (optional)", "`scalpel hooks install`"))
    out.append(Check("statusline", "ok" if hs.statusline else "info",
                     "scalpel's statusLine is set" if hs.statusline else
                     ("another statusLine is set" if hs.foreign_statusline else "not set (optional)"),
                     "" if hs.statusline else "`scalpel statusline --install`"))
    out.append(Check("versions", "info",
                     f"scalpel-desktop {__version__}, Python {platform.python_version()} ({sys.executable}), {platform.system()} {platform.release()}"))
    claude = shutil.which("claude")
    if claude:
        try:
            cp = subprocess.run([claude, "--version"], capture_output=True, text=True, timeout=claude_version_timeout)
            out.append(Check("Claude Code CLI", "info", (cp.stdout or cp.stderr).strip().splitlines()[0] if (cp.stdout or cp.stderr).strip() else claude))
        except (OSError, subprocess.SubprocessError) as e:
            out.append(Check("Claude Code CLI", "warn", f"{claude} --version failed: {e}"))
    else:
        out.append(Check("Claude Code CLI", "info", "`claude` not on PATH"))
    if sys.platform.startswith("linux"):
        out.append(_tray_check())
    return out


def _running_proxy_checks(port: int) -> list[Check]:
    """What the running proxy itself says is off or failing (its status's ``degraded``)."""
    from scalpel_desktop.cli.degraded import degraded_checks
    from scalpel_desktop.control_client import ControlClient, ControlError

    try:
        status = ControlClient(port, timeout=5.0).status()
    except ControlError as e:
        return [Check("proxy status", "fail", f"the proxy answers but not its status: {e}",
                      "see the log; restart it: `scalpel stop && scalpel start`")]
    return [Check(*c) for c in degraded_checks(status)]


def _shell_base_url(port: int, proxy_answers: bool, settings_url: object, where: str) -> list[Check]:
    """The shell's ANTHROPIC_BASE_URL: where Claude Code started from this shell goes, unless settings.json sets one."""
    from scalpel_desktop.service.probe import is_scalpel_url

    env_url = os.environ.get("ANTHROPIC_BASE_URL")
    if not env_url:
        return []
    if isinstance(settings_url, str) and settings_url:
        if settings_url == env_url:
            return []
        return [Check("environment", "info", f"ANTHROPIC_BASE_URL={env_url} in this shell",
                      f"{where} sets ANTHROPIC_BASE_URL={settings_url}, which wins inside Claude Code")]
    alive = proxy_answers if is_scalpel_url(env_url, port) else _answers(env_url)
    if alive is False:
        return [Check("environment", "fail",
                      f"ANTHROPIC_BASE_URL={env_url} in this shell, where nothing answers: Claude Code started from "
                      "this shell cannot reach the API (it retries, then gives up)",
                      "start the proxy (`scalpel start`, `scalpel tray`) or `unset ANTHROPIC_BASE_URL` "
                      "(and remove it from your shell profile)")]
    if is_scalpel_url(env_url, port):
        return [Check("environment", "ok", f"ANTHROPIC_BASE_URL={env_url} in this shell routes Claude Code through scalpel")]
    return [Check("environment", "info", f"ANTHROPIC_BASE_URL={env_url} in this shell: Claude Code started here goes there",
                  "`scalpel autopilot on` makes that URL scalpel's upstream and routes through scalpel")]


def _tray_check() -> Check:
    """The tray as the tray itself would find it (desktop_env.tray_host, the same test, not a guess)."""
    from scalpel_desktop.desktop_env.tray_host import find_linux_host, gtk_available

    host = find_linux_host()
    if host.backend != "none":
        return Check("tray", "ok", f"a tray with a menu can be shown ({host.backend} backend)")
    if not gtk_available():
        return Check("tray", "warn", f"{host.reason}: the tray has no menu on Linux", host.hint)
    if "no display" in host.reason:
        return Check("tray", "info", f"PyGObject and GTK 3 present; {host.reason} in this shell")
    return Check("tray", "warn", f"PyGObject and GTK 3 present, but {host.reason}", host.hint)


REPEATS = 3  # a cause seen this often in one session in a week is a pattern, not an accident
_PATTERN_FIX = {
    "tools-changed": "the tool list changes mid-session (an MCP server connecting and dropping, a plugin): keep "
                     "the servers connected, or turn on the tool filter (`scalpel tools on`) so the list stays put",
    "settings-changed": "a setting of the message cache flips mid-session (effort, thinking, tool_choice): pick it "
                        "once per session; each flip re-writes the whole history",
    "lookback": "turns add more than ~20 content blocks past the last cache marker (many parallel tool calls): "
                "the provider finds nothing of the history and re-writes it; fewer calls per turn avoid it",
    "system-changed": "the system prompt changes mid-session (CLAUDE.md or output style edits, a plugin): each "
                      "change re-writes everything after it",
}


def miss_pattern_checks(now: float | None = None) -> list[Check]:
    """Cache misses of one avoidable cause that repeat in a session over the last 7 days (the ledger's
    ``store/misses.py``): each one re-wrote the cache; what to change so it stops."""
    import sqlite3
    import time

    from scalpel_desktop.store.ledger_queries import open_readonly
    from scalpel_desktop.store.misses import misses_since, repeated_causes

    since = (time.time() if now is None else now) - 7 * 86400
    try:
        conn = open_readonly()
        if conn is None:
            return []
        try:
            found = repeated_causes(conn, since, tuple(_PATTERN_FIX), REPEATS)
            cost: dict[tuple[str, str], float] = {(s, c): 0.0 for s, c, _ in found}
            for m in misses_since(conn, since) if found else ():
                if (m.session, m.cause) in cost:
                    cost[(m.session, m.cause)] += m.cost_usd
        finally:
            conn.close()
    except sqlite3.Error:
        return []  # the ledger's own check says what is wrong with it
    return [Check("cache misses", "warn", f"{cause} {n} times in session {session[:8]} this week "
                  f"(${cost.get((session, cause), 0.0):.4f} re-written)", _PATTERN_FIX[cause])
            for session, cause, n in found[:3]]
