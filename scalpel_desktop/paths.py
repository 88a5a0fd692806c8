"""Where scalpel keeps its files.

Every directory comes from platformdirs, except when ``SCALPEL_HOME`` is set:
then everything (data, config, state, spill, logs) lives below it. Every test
sets ``SCALPEL_HOME`` so that no run ever touches a real user directory.

Claude Code's own directories are resolved here too, but only from the
environment (``CLAUDE_CONFIG_DIR`` and ``HOME``): tests point both at a
temporary folder.
"""

from __future__ import annotations

import os
from pathlib import Path

APP_NAME = "scalpel-desktop"


class Dirs:
    """The three base directories. A plain immutable class, not a dataclass: Claude Code's
    hooks import this module on every tool call, and ``dataclasses`` costs them ~10 ms."""

    __slots__ = ("data", "config", "state")
    data: Path
    config: Path
    state: Path

    def __init__(self, data: Path, config: Path, state: Path) -> None:
        object.__setattr__(self, "data", data)
        object.__setattr__(self, "config", config)
        object.__setattr__(self, "state", state)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Dirs is immutable: cannot set {name}")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Dirs):
            return NotImplemented
        return (self.data, self.config, self.state) == (other.data, other.config, other.state)

    def __hash__(self) -> int:
        return hash((self.data, self.config, self.state))

    def __repr__(self) -> str:
        return f"Dirs(data={self.data!r}, config={self.config!r}, state={self.state!r})"

    @property
    def spill(self) -> Path:
        return self.data / "spill"

    @property
    def logs(self) -> Path:
        return self.state / "logs"

    @property
    def database(self) -> Path:
        return self.data / "ledger.sqlite3"

    @property
    def config_file(self) -> Path:
        return self.config / "config.json"

    @property
    def token_file(self) -> Path:
        """The per-install control token (mode 0600)."""
        return self.config / "control-token"

    @property
    def runtime_file(self) -> Path:
        """Written by a running proxy: pid, port, start time."""
        return self.state / "proxy.json"

    @property
    def lock_file(self) -> Path:
        return self.state / "proxy.lock"


def dirs() -> Dirs:
    home = os.environ.get("SCALPEL_HOME")
    if home:
        root = Path(home).expanduser()
        return Dirs(data=root / "data", config=root / "config", state=root / "state")
    import platformdirs

    return Dirs(
        data=Path(platformdirs.user_data_dir(APP_NAME, appauthor=False)),
        config=Path(platformdirs.user_config_dir(APP_NAME, appauthor=False)),
        state=Path(platformdirs.user_state_dir(APP_NAME, appauthor=False)),
    )


def private_roots() -> list[Path]:
    """The directories scalpel owns: ``SCALPEL_HOME``, else the platformdirs data, config
    and state dirs. Everything at or below them is private (dirs 0700, files 0600)."""
    home = os.environ.get("SCALPEL_HOME")
    if home:
        return [Path(home).expanduser()]
    d = dirs()
    return [d.data, d.config, d.state]


def make_private_parents(path: str | os.PathLike) -> Path:
    """Make the directory ``path`` exist: each missing component is created 0700 (the
    XDG rule for new base dirs), and each existing one at or below one of
    ``private_roots()`` is narrowed to 0700. Dirs outside those roots that already
    exist are left as they are (``~/.claude``, ``~/.config/systemd/user``, ...)."""
    path = Path(path)
    missing: list[Path] = []
    p = path
    while not os.path.isdir(p):
        missing.append(p)
        if p.parent == p:
            break
        p = p.parent
    for d in reversed(missing):
        try:
            os.mkdir(d, 0o700)
            os.chmod(d, 0o700)  # exactly, whatever the umask
        except FileExistsError:
            pass
    roots = private_roots()
    for d in (path, *path.parents):
        inside = any(d == r or r in d.parents for r in roots)
        if not inside and d not in missing:
            break
        _narrow_dir(d)  # the umask cannot widen a mkdir, but an older version may have
    return path


def _narrow_dir(path: Path) -> None:
    """Take group and other bits away; never add one."""
    try:
        mode = os.stat(path).st_mode & 0o777
        if mode & 0o077:
            os.chmod(path, mode & 0o700)
    except OSError:
        pass


def ensure_private_dir(path: Path) -> Path:
    """Create ``path`` (and parents) 0700 and make it 0700 even outside scalpel's own
    dirs (a configured spill dir): it may hold raw tool output."""
    make_private_parents(path)
    _narrow_dir(path)
    return path


def user_home() -> Path:
    return Path(os.environ.get("HOME") or os.path.expanduser("~"))


def claude_config_dir() -> Path:
    """Claude Code's config dir: ``$CLAUDE_CONFIG_DIR``, else ``~/.claude``."""
    env = os.environ.get("CLAUDE_CONFIG_DIR")
    if env:
        return Path(env).expanduser()
    return user_home() / ".claude"


def claude_projects_dirs() -> list[Path]:
    """Every place Claude Code may keep transcripts, existing ones only."""
    candidates = []
    env = os.environ.get("CLAUDE_CONFIG_DIR")
    if env:
        candidates.append(Path(env).expanduser() / "projects")
    candidates.append(user_home() / ".claude" / "projects")
    candidates.append(user_home() / ".config" / "claude" / "projects")
    seen: list[Path] = []
    for c in candidates:
        if c.is_dir() and c not in seen:
            seen.append(c)
    return seen


def home_relative(path: Path) -> str:
    """Render ``path`` as ``~/...`` when it is under the home dir (never the user's name)."""
    try:
        rel = Path(path).resolve().relative_to(user_home().resolve())
    except (ValueError, OSError):
        return str(path)
    return "~/" + rel.as_posix()
