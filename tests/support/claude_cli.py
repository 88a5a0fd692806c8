"""Run the real Claude Code CLI offline against a local base URL (SPEC section 9).

HOME and CLAUDE_CONFIG_DIR come from the test's environment (the autouse
fixture in tests/conftest.py points them at a temporary folder), the API key
is a dummy, telemetry / error reporting / non-essential traffic / the
auto-updater are off, CLAUDE_CODE_TMPDIR lives inside the temporary HOME, and
IS_SANDBOX=1 lets ``--dangerously-skip-permissions`` run as root.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
from pathlib import Path
from typing import Any, Mapping, Sequence

from tests.support import claude_bin

DUMMY_KEY = "sk-ant-api03-scalpel-test-dummy-key"


def claude_env(base_url: str, env_extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    home = Path(env["HOME"])
    tmp = home / ".claude-tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    env.update({
        "ANTHROPIC_BASE_URL": base_url,
        "ANTHROPIC_API_KEY": DUMMY_KEY,
        "CLAUDE_CONFIG_DIR": env.get("CLAUDE_CONFIG_DIR") or str(home / ".claude"),
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_TMPDIR": str(tmp),
        "NO_COLOR": "1",
    })
    for k in ("ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX", "CLAUDECODE",
              "CLAUDE_CODE_ENTRYPOINT", "CLAUDE_CODE_OAUTH_TOKEN"):
        env.pop(k, None)
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        env["IS_SANDBOX"] = "1"
    if env_extra:
        env.update(env_extra)
    return env


def run_claude(base_url: str, workdir: str | os.PathLike, prompt: str, *, resume: str | None = None,
               continue_: bool = False, extra_args: Sequence[str] = (), env_extra: Mapping[str, str] | None = None,
               timeout: float = 120) -> tuple[int, Any, str, str]:
    """``claude -p PROMPT --output-format json --dangerously-skip-permissions`` in ``workdir``.

    Returns (returncode, parsed JSON result or None, stdout, stderr)."""
    args = [claude_bin(), "-p", prompt, "--output-format", "json", "--dangerously-skip-permissions"]
    if resume:
        args += ["--resume", resume]
    if continue_:
        args.append("--continue")
    args += list(extra_args)
    proc = subprocess.run(args, cwd=str(workdir), env=claude_env(base_url, env_extra), stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=timeout)
    parsed = None
    out = proc.stdout.strip()
    if out:
        try:
            parsed = json.loads(out.splitlines()[-1])
        except ValueError:
            try:
                parsed = json.loads(out)
            except ValueError:
                parsed = None
    return proc.returncode, parsed, proc.stdout, proc.stderr


@contextlib.contextmanager
def upstream_emulator(tmp_path: Path):
    """``(emulator, project dir)``: an emulated API saved as scalpel's Anthropic upstream in the
    (temporary) config, and an empty folder for ``run_claude`` to work in; the emulator stops after."""
    from scalpel_desktop.config import Config
    from scalpel_desktop.emulator.testing import running_emulator

    workdir = tmp_path / "project"
    workdir.mkdir()
    with running_emulator(require_auth=False) as emu:
        cfg = Config.load()
        cfg.set("anthropic_upstream", emu.url)
        cfg.save()
        yield emu, workdir
