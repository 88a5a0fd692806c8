"""Render the login-service files from the templates in ``service/templates/``.

Pure functions: they return text/bytes and never write or start anything, so
every platform's files can be rendered and validated on any machine (the tests
validate the systemd unit with ``systemd-analyze``, the desktop entry with
``desktop-file-validate``, the plist with plistlib, the task XML with an XML
parser).
"""

from __future__ import annotations

import os
import plistlib
import sys
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from xml.sax.saxutils import escape

LABEL = "dev.scalpel-desktop"
UNIT_NAME = "scalpel-desktop.service"
DESKTOP_NAME = "scalpel-desktop-tray.desktop"
TASK_NAME = "scalpel-desktop"

#: How long a service manager waits after its stop signal before it kills the proxy (systemd's
#: ``TimeoutStopSec``, launchd's ``ExitTimeOut``). The proxy stops within 5 s (``runtime_stop.STOP_TIMEOUT_S``:
#: the rows written or journaled), then the interpreter exits (an analysis already running finishes): a kill
#: before that loses nothing, but a kill before the 5 s could (issue 25: systemd's 10 s met an 11 s stop).
#: Task Scheduler has no such wait: ``schtasks /End`` kills at once (the journal keeps what was not written).
STOP_TIMEOUT_S = 20

#: Variables a service must inherit from the installing shell (so a service
#: installed with SCALPEL_HOME set uses the same data, config and port).
PASSED_ENV = ("SCALPEL_HOME", "CLAUDE_CONFIG_DIR", "SCALPEL_ANTHROPIC_UPSTREAM", "SCALPEL_OPENAI_UPSTREAM")


def template(name: str) -> str:
    return resources.files("scalpel_desktop.service").joinpath("templates", name).read_text(encoding="utf-8")


@dataclass(frozen=True)
class Launch:
    """How to run scalpel: an interpreter plus arguments, and an environment."""

    program: str
    args: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)

    @property
    def argv(self) -> list[str]:
        return [self.program, *self.args]


def python_launch(command: str, *, windowless: bool = False) -> Launch:
    """``<python> -m scalpel_desktop <command>``, or the frozen app itself."""
    env = {k: os.environ[k] for k in PASSED_ENV if os.environ.get(k)}
    if getattr(sys, "frozen", False):
        return Launch(sys.executable, (command,), env)
    exe = sys.executable
    if windowless and exe.lower().endswith("python.exe"):
        candidate = exe[: -len("python.exe")] + "pythonw.exe"
        if Path(candidate).exists():
            exe = candidate
    return Launch(exe, ("-m", "scalpel_desktop", command), env)


# -- systemd / XDG ---------------------------------------------------------
def _systemd_quote(arg: str) -> str:
    if arg and all(c.isalnum() or c in "/._-+=:,@" for c in arg):
        return arg.replace("%", "%%")
    return '"' + arg.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%") + '"'


def render_systemd_unit(launch: Launch) -> str:
    exec_start = " ".join(_systemd_quote(a) for a in launch.argv)
    env_lines = "".join(f"Environment={_systemd_quote(f'{k}={v}')}\n" for k, v in sorted(launch.env.items()))
    env_lines += "Environment=PYTHONUNBUFFERED=1\n"
    text = template(UNIT_NAME)
    text = "\n".join(line for line in text.splitlines() if not line.startswith("# ")) + "\n"
    text = text.replace("@STOP_TIMEOUT@", str(STOP_TIMEOUT_S))
    return text.replace("@EXEC_START@", exec_start).replace("@ENVIRONMENT@\n", env_lines)


def _desktop_quote(arg: str) -> str:
    """Desktop Entry spec Exec quoting (reserved characters -> a quoted argument)."""
    reserved = set(' \t\n"\'\\><~|&;$*?#()`')
    if arg and not (set(arg) & reserved) and "%" not in arg:
        return arg
    inner = arg.replace("\\", "\\\\").replace('"', '\\"').replace("`", "\\`").replace("$", "\\$")
    return '"' + inner.replace("%", "%%") + '"'


def render_desktop_entry(launch: Launch, icon: str) -> str:
    argv = list(launch.argv)
    if launch.env:
        argv = ["env", *[f"{k}={v}" for k, v in sorted(launch.env.items())], *argv]
    exec_line = " ".join(_desktop_quote(a) for a in argv)
    return template(DESKTOP_NAME).replace("@EXEC_TRAY@", exec_line).replace("@ICON@", icon)


# -- launchd ---------------------------------------------------------------
def render_launchd_plist(label: str, launch: Launch, log_path: str, *, always_restart: bool = False) -> bytes:
    """``always_restart``: ``KeepAlive`` true (the proxy: back after any exit while
    autopilot is on); else back only after a crash (the tray: Quit means quit)."""
    doc = plistlib.loads(template("launchd-agent.plist").encode("utf-8"))
    doc["Label"] = label
    if always_restart:
        doc["KeepAlive"] = True
    doc["ProgramArguments"] = launch.argv
    doc["EnvironmentVariables"] = {**launch.env, "PYTHONUNBUFFERED": "1"}
    doc["ExitTimeOut"] = STOP_TIMEOUT_S  # after SIGTERM, before SIGKILL
    doc["StandardOutPath"] = log_path
    doc["StandardErrorPath"] = log_path
    return plistlib.dumps(doc, fmt=plistlib.FMT_XML, sort_keys=False)


# -- Windows Task Scheduler ---------------------------------------------------
def _windows_args(args: tuple[str, ...]) -> str:
    import subprocess

    return subprocess.list2cmdline(list(args))


#: Task Scheduler has no "restart on any exit": the proxy's logon trigger repeats
#: every minute, and MultipleInstancesPolicy=IgnoreNew makes a repeat a no-op
#: while the proxy runs, so an exited proxy is back within a minute.
WINDOWS_REPEAT = "<Repetition><Interval>PT1M</Interval><StopAtDurationEnd>false</StopAtDurationEnd></Repetition>"


def render_windows_task(task_name: str, description: str, launch: Launch, user_id: str, *, always_restart: bool = False) -> str:
    """Task XML (text; written as UTF-16 as schtasks expects). ``always_restart``: see WINDOWS_REPEAT."""
    text = template("windows-task.xml")
    text = text.replace("@REPETITION@", WINDOWS_REPEAT if always_restart else "")
    values = {
        "@DESCRIPTION@": description,
        "@TASK_NAME@": task_name,
        "@USER_ID@": user_id,
        "@COMMAND@": launch.program,
        "@ARGUMENTS@": _windows_args(launch.args),
    }
    for key, value in values.items():
        text = text.replace(key, escape(value))
    return text
