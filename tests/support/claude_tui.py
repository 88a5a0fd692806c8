"""Drive the interactive Claude Code TUI in tmux (SPEC section 9), offline.

A private tmux server (its own ``-L`` socket, so nothing else's sessions are
touched) runs ``claude`` in a 120x40 pane with the environment of
``claude_env`` (temporary HOME and CLAUDE_CONFIG_DIR, dummy key, telemetry
and updater off, IS_SANDBOX=1 as root). The first-run screens are skipped by
the config Claude Code itself writes once they are answered: onboarding done,
a theme, the dummy key approved, the work folder trusted
(``write_first_run_config``). ``send`` types a line and presses Enter;
``wait_for`` polls ``capture-pane`` until a predicate holds.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from tests.support import claude_bin, require
from tests.support.claude_cli import DUMMY_KEY, claude_env


def write_first_run_config(env: Mapping[str, str], workdir: Path) -> Path:
    """The global config a user has after the first-run screens (theme, key, trust) were answered."""
    config_dir = Path(env["CLAUDE_CONFIG_DIR"])
    config_dir.mkdir(parents=True, exist_ok=True)
    path = config_dir / ".claude.json"
    doc = json.loads(path.read_text()) if path.exists() else {}
    doc.update({
        "hasCompletedOnboarding": True,
        "theme": "dark",
        "numStartups": 1,
        "bypassPermissionsModeAccepted": True,
        "customApiKeyResponses": {"approved": [DUMMY_KEY[-20:]], "rejected": []},
    })
    projects = doc.setdefault("projects", {})
    for p in {str(workdir), str(workdir.resolve())}:
        projects.setdefault(p, {}).update({"hasTrustDialogAccepted": True, "hasCompletedProjectOnboarding": True})
    path.write_text(json.dumps(doc, indent=2))
    return path


class ClaudeTui:
    def __init__(self, base_url: str, workdir: str | os.PathLike, *, args: Sequence[str] = (),
                 env_extra: Mapping[str, str] | None = None, width: int = 120, height: int = 40):
        require(bool(shutil.which("tmux")), "tmux")
        self.workdir = Path(workdir)
        self.env = claude_env(base_url, env_extra)
        self.env.pop("NO_COLOR", None)
        self.env.setdefault("TERM", "xterm-256color")
        self.socket = f"scalpel-test-{uuid.uuid4().hex[:12]}"
        self.session = "claude"
        self.args = [claude_bin(), *args]
        self.size = (width, height)

    def _tmux(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run(["tmux", "-L", self.socket, *args], env=self.env, capture_output=True, text=True,
                              timeout=30, check=check)

    def start(self, statusline_dir: Path | None = None) -> ClaudeTui:
        write_first_run_config(self.env, self.workdir)
        if statusline_dir is not None:
            capture_statusline(self.env, statusline_dir)
        command = " ".join(shlex.quote(a) for a in self.args)
        w, h = self.size
        self._tmux("-f", "/dev/null", "new-session", "-d", "-x", str(w), "-y", str(h), "-s", self.session,
                   "-c", str(self.workdir), command)
        self._tmux("set-option", "-t", self.session, "remain-on-exit", "on", check=False)
        return self

    def screen(self, history: bool = False) -> str:
        """The visible pane (with ``history``, everything scrolled off above it too)."""
        extra = ("-S", "-") if history else ()
        cp = self._tmux("capture-pane", "-p", *extra, "-t", self.session, check=False)
        return cp.stdout

    def keys(self, *keys: str) -> None:
        self._tmux("send-keys", "-t", self.session, *keys)

    def type(self, text: str) -> None:
        self._tmux("send-keys", "-t", self.session, "-l", text)

    def send(self, text: str) -> None:
        """Type ``text`` and press Enter (a short pause lets the input box take the text first)."""
        self.type(text)
        time.sleep(0.3)
        self.keys("Enter")

    def wait_for(self, cond: Callable[[str], bool], timeout: float = 60.0, what: str = "",
                 history: bool = False) -> str:
        """Poll the screen until ``cond(screen)``; raise with the last screen when it never holds."""
        deadline = time.monotonic() + timeout
        while True:
            s = self.screen(history)
            if cond(s):
                return s
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what or cond}; the screen was:\n{s}")
            time.sleep(0.25)

    def stop(self) -> None:
        self._tmux("kill-server", check=False)

    def __enter__(self) -> ClaudeTui:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


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
