"""Drive the real Claude Code terminal UI under tmux, offline (SPEC section 9).

    with ClaudeTui(base_url, workdir) as tui:
        tui.prompt("Read a.txt")              # types it and presses Enter
        tui.wait_for(lambda screen: len(emu.received) >= 2)
        tui.keys("Escape")                   # any tmux key name
        print(tui.screen())

Each session runs on its own tmux server (``-L`` socket in the test's temporary
HOME), 120x40, with the environment of ``claude_cli.claude_env`` (temporary HOME
and CLAUDE_CONFIG_DIR, dummy key, no telemetry). ``seed_config`` marks
onboarding done, the dummy key approved, the folder trusted and the
bypass-permissions warning seen, so the first screen is the prompt.
Stopping kills that tmux server only (by its socket), never another.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Self

from tests.support import claude_bin, require
from tests.support.claude_cli import DUMMY_KEY, claude_env

PROMPT = "\u276f"  # the input line's prompt character, drawn once the UI is ready


def seed_config(env: Mapping[str, str], workdir: Path) -> None:
    """Onboarding done, the dummy key approved, ``workdir`` trusted, no bypass warning."""
    cfg_dir = Path(env["CLAUDE_CONFIG_DIR"])
    cfg_dir.mkdir(parents=True, exist_ok=True)
    path = cfg_dir / ".claude.json"
    data = json.loads(path.read_text()) if path.exists() else {}
    data.update({"hasCompletedOnboarding": True, "theme": "dark", "numStartups": 3,
                 "customApiKeyResponses": {"approved": [DUMMY_KEY[-20:]], "rejected": []},
                 "bypassPermissionsModeAccepted": True})
    projects = data.setdefault("projects", {})
    projects.setdefault(str(workdir), {}).update({"hasTrustDialogAccepted": True,
                                                 "hasCompletedProjectOnboarding": True})
    path.write_text(json.dumps(data))
    settings = cfg_dir / "settings.json"
    s = json.loads(settings.read_text()) if settings.exists() else {}
    s.update({"skipDangerousModePermissionPrompt": True})
    settings.write_text(json.dumps(s))


class ClaudeTui:
    def __init__(self, base_url: str, workdir: str | os.PathLike, args: Sequence[str] = (),
                 env_extra: Mapping[str, str] | None = None, wrapper: Sequence[str] = (),
                 width: int = 120, height: int = 40, skip_permissions: bool = True):
        require(bool(_which("tmux")), "tmux")
        self.workdir = Path(workdir).resolve()
        self.env = claude_env(base_url, env_extra)
        self.env.pop("NO_COLOR", None)
        self.args = [*wrapper, claude_bin(), *(["--dangerously-skip-permissions"] if skip_permissions else []), *args]
        self.size = (width, height)
        home = Path(self.env["HOME"])
        self.socket = str(home / f".tmux-{os.getpid()}-{id(self)}")
        self.name = "claude"
        self._started = False

    # ---------------------------------------------------------------- life
    def start(self, statusline_dir: Path | None = None) -> ClaudeTui:
        """Launch claude in tmux and wait for its prompt; with ``statusline_dir``, every
        statusline input Claude Code sends is saved there (``captured_statuslines``)."""
        seed_config(self.env, self.workdir)
        if statusline_dir is not None:
            capture_statusline(self.env, statusline_dir)
        launcher = Path(self.env["HOME"]) / f"launch-{id(self)}.sh"
        lines = ["#!/bin/sh"] + [f"export {k}={shlex.quote(v)}" for k, v in self.env.items()
                                 if k.isidentifier()]
        lines.append(f"cd {shlex.quote(str(self.workdir))} && exec {' '.join(shlex.quote(a) for a in self.args)}")
        launcher.write_text("\n".join(lines) + "\n")
        launcher.chmod(0o700)
        w, h = self.size
        self._tmux("new-session", "-d", "-x", str(w), "-y", str(h), "-s", self.name, str(launcher))
        self._started = True
        self.wait_for_screen(PROMPT, timeout=60)
        return self

    def stop(self) -> None:
        if self._started:
            self._started = False
            subprocess.run(["tmux", "-S", self.socket, "kill-server"], capture_output=True, timeout=10, check=False)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # ---------------------------------------------------------------- input
    def keys(self, *keys: str) -> None:
        """tmux key names (``Enter``, ``Escape``, ``BTab`` = shift+tab, ``C-c``)."""
        self._tmux("send-keys", "-t", self.name, *keys)

    def type(self, text: str) -> None:
        self._tmux("send-keys", "-t", self.name, "-l", text)

    def prompt(self, text: str) -> None:
        """Type ``text`` and submit it (Enter sent apart: a pasted newline is no submit)."""
        self.type(text)
        time.sleep(0.15)
        self.keys("Enter")

    send = prompt

    # ---------------------------------------------------------------- output
    def screen(self, history: bool = False) -> str:
        """The visible pane (with ``history``, everything scrolled off above it too)."""
        extra = ("-S", "-") if history else ()
        return self._tmux("capture-pane", "-p", *extra, "-t", self.name).stdout

    def wait_for(self, cond: Callable[[str], bool], timeout: float = 30, what: str = "condition",
                 history: bool = False) -> str:
        """Poll until ``cond(screen)`` holds and return that screen; raise with the last
        screen when it never does, or at once when claude exits."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            s = self.screen(history)
            if cond(s):
                return s
            if not self.alive():
                raise AssertionError(f"claude exited while waiting for {what}")
            time.sleep(0.05)
        raise AssertionError(f"timed out after {timeout}s waiting for {what}; screen:\n{self.screen()}")

    def wait_for_screen(self, text: str, timeout: float = 30) -> str:
        return self.wait_for(lambda s: text in s, timeout, repr(text))

    def alive(self) -> bool:
        r = subprocess.run(["tmux", "-S", self.socket, "has-session", "-t", self.name], capture_output=True, check=False)
        return r.returncode == 0

    def _tmux(self, *args: str) -> subprocess.CompletedProcess:
        r = subprocess.run(["tmux", "-S", self.socket, *args], capture_output=True, text=True, timeout=20, check=False)
        if r.returncode != 0:
            raise AssertionError(f"tmux {args[0]} failed: {r.stderr.strip()}")
        return r


def capture_statusline(env: Mapping[str, str], out_dir: Path) -> None:
    """Point Claude Code's ``statusLine`` at a command that saves each stdin JSON in ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    config_dir = Path(env["CLAUDE_CONFIG_DIR"])
    config_dir.mkdir(parents=True, exist_ok=True)
    settings = config_dir / "settings.json"
    doc = json.loads(settings.read_text()) if settings.exists() else {}
    target = shlex.quote(str(out_dir))
    doc["statusLine"] = {"type": "command",
                         "command": f'f={target}/s-$(date +%s%N); cat > "$f.tmp" && mv "$f.tmp" "$f.json"'}
    settings.write_text(json.dumps(doc, indent=2))


def captured_statuslines(out_dir: Path) -> list[dict]:
    """Every statusline input saved so far, oldest first."""
    out = []
    for p in sorted(out_dir.glob("s-*.json")):
        try:
            out.append(json.loads(p.read_text()))
        except ValueError:
            continue
    return out


def _which(name: str) -> str | None:
    from shutil import which

    return which(name)
