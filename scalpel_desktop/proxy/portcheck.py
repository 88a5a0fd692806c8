"""A port already in use: say which process holds it, when we can tell (SPEC 8).

Linux: find the listening socket's inode in ``/proc/net/tcp`` (and ``tcp6``),
then the process whose ``/proc/<pid>/fd`` links to ``socket:[inode]`` (only
our own user's processes are readable; others stay anonymous). Elsewhere:
``lsof -nP -iTCP:<port> -sTCP:LISTEN``. Never raises: at worst the message
says the port is taken without naming who took it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

_LISTEN = "0A"


@dataclass(frozen=True)
class PortOwner:
    pid: int | None
    name: str

    def __str__(self) -> str:
        return f"{self.name} (pid {self.pid})" if self.pid else self.name


class PortInUse(OSError):
    """The proxy's port is taken; the message names the holder when known."""

    def __init__(self, port: int, host: str = "127.0.0.1", owner: PortOwner | None = None):
        self.port = port
        self.host = host
        self.owner = owner
        who = f" by {owner}" if owner else " by another process"
        super().__init__(
            f"port {port} on {host} is already in use{who}; "
            f"stop it or choose another port (scalpel start --port N, or scalpel config set port N)"
        )


def _listening_inodes(port: int, proc: Path) -> set[str]:
    inodes: set[str] = set()
    for table in ("tcp", "tcp6"):
        try:
            lines = (proc / "net" / table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            cols = line.split()
            if len(cols) < 10:
                continue
            local, state, inode = cols[1], cols[3], cols[9]
            try:
                lport = int(local.rsplit(":", 1)[1], 16)
            except (IndexError, ValueError):
                continue
            if lport == port and state == _LISTEN and inode != "0":
                inodes.add(inode)
    return inodes


def _proc_owner(port: int, proc: Path = Path("/proc")) -> PortOwner | None:
    inodes = _listening_inodes(port, proc)
    if not inodes:
        return None
    targets = {f"socket:[{i}]" for i in inodes}
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fds = list((entry / "fd").iterdir())
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(fd) in targets:
                    return PortOwner(int(entry.name), _proc_name(entry))
            except OSError:
                continue
    return PortOwner(None, "a process of another user")


def _proc_name(entry: Path) -> str:
    try:
        cmd = (entry / "cmdline").read_bytes().split(b"\0")
        words = [c.decode("utf-8", "replace") for c in cmd if c]
        if words:
            return " ".join(words[:3])[:120]
    except OSError:
        pass
    try:
        return (entry / "comm").read_text().strip()
    except OSError:
        return "unknown"


def _lsof_owner(port: int) -> PortOwner | None:
    lsof = shutil.which("lsof")
    if not lsof:
        return None
    try:
        out = subprocess.run(
            [lsof, "-nP", f"-iTCP:{port}", "-sTCP:LISTEN", "-Fpc"],
            capture_output=True, text=True, timeout=5, check=False,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    pid, name = None, ""
    for line in out.splitlines():
        if line.startswith("p") and pid is None:
            pid = int(line[1:]) if line[1:].isdigit() else None
        elif line.startswith("c") and not name:
            name = line[1:]
    return PortOwner(pid, name or "unknown") if pid else None


def port_owner(port: int) -> PortOwner | None:
    """Who listens on ``port``, or None when nobody (or we cannot tell)."""
    try:
        if sys.platform.startswith("linux") and Path("/proc/net/tcp").exists():
            return _proc_owner(port)
        return _lsof_owner(port)
    except Exception:  # noqa: BLE001 - best effort only
        return None


def port_in_use_error(port: int, host: str = "127.0.0.1") -> PortInUse:
    return PortInUse(port, host, port_owner(port))
