"""Open ``scalpel tui`` in the user's terminal emulator.

Linux: ``$TERMINAL -e``, then ``xdg-terminal-exec``, ``x-terminal-emulator -e``,
``gnome-terminal --``, ``konsole -e``, ``xfce4-terminal -x``, ``kitty``,
``alacritty -e``, ``xterm -e``. macOS: Terminal via ``osascript``. Windows:
``wt.exe``, else a new console (with ``python.exe`` when the tray runs under
``pythonw.exe``). ``open_tui`` returns None on success, else a message saying
no terminal was found and how to run the dashboard by hand.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys

# (executable, arguments placed before the command)
LINUX_TERMINALS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("xdg-terminal-exec", ()),
    ("x-terminal-emulator", ("-e",)),
    ("gnome-terminal", ("--",)),
    ("konsole", ("-e",)),
    ("xfce4-terminal", ("-x",)),
    ("kitty", ()),
    ("alacritty", ("-e",)),
    ("xterm", ("-e",)),
)


def tui_command() -> list[str]:
    exe = sys.executable
    if getattr(sys, "frozen", False):
        return [exe, "tui"]
    if sys.platform == "win32" and exe.lower().endswith("pythonw.exe"):
        exe = exe[: -len("pythonw.exe")] + "python.exe"
    return [exe, "-m", "scalpel_desktop", "tui"]


def terminal_argv(command: list[str], env: dict | None = None, which=shutil.which) -> list[str] | None:
    """The argv that opens ``command`` in a terminal here, or None when none is found."""
    env = os.environ if env is None else env
    if sys.platform == "darwin":
        script = " ".join(shlex.quote(a) for a in command)
        return ["osascript", "-e", f'tell application "Terminal" to do script "{script}"',
                "-e", 'tell application "Terminal" to activate']
    if sys.platform == "win32":  # pragma: no cover - Windows
        if which("wt.exe") or which("wt"):
            return ["wt.exe", *command]
        return command  # run with CREATE_NEW_CONSOLE
    user = env.get("TERMINAL")
    if user:
        parts = shlex.split(user)
        if parts and which(parts[0]):
            return [*parts, "-e", *command]
    for exe, pre in LINUX_TERMINALS:
        path = which(exe)
        if path:
            return [path, *pre, *command]
    return None


def open_tui() -> str | None:
    command = tui_command()
    argv = terminal_argv(command)
    if argv is None:
        return "no terminal emulator found (set $TERMINAL); run `scalpel tui` in a terminal"
    kwargs: dict = {"stdin": subprocess.DEVNULL, "stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    if sys.platform == "win32":  # pragma: no cover - Windows
        kwargs["creationflags"] = getattr(subprocess, "CREATE_NEW_CONSOLE", 0)
    else:
        kwargs["start_new_session"] = True
    try:
        subprocess.Popen(argv, **kwargs)
    except OSError as e:
        return f"cannot start {argv[0]}: {e}; run `scalpel tui` in a terminal"
    return None
