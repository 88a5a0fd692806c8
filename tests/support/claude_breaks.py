"""One real Claude Code conversation through the real proxy to the emulator, and its three
facts per request (``request_diff.steps``): the harness of tests/claude_code_breaks.

    with Live(tmp_path) as live:
        live.run("Read a.txt please.")                 # claude -p, print mode
        live.run("And now?", continue_=True)
        for step in live.steps(): print(step)

The proxy is the shipped ``Runtime`` (its pipeline, its ledger in SCALPEL_HOME);
the economist's break and reason are read back from the ledger rows it wrote.
The script answers from the request alone (``emulator.script``); the
``compaction_aware`` wrapper gives Claude Code's summary prompt a proper
``<summary>`` answer so one compaction takes one request.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Self

from scalpel_desktop.config import Config
from scalpel_desktop.emulator.script import Choice, Script, Turn, call, say
from scalpel_desktop.emulator.testing import running_emulator
from scalpel_desktop.paths import dirs
from scalpel_desktop.runtime import Runtime
from tests.support import request_diff as rd
from tests.support.claude_cli import run_claude

SUMMARY = "<analysis>The user asked to read a.txt.</analysis>\n<summary>1. The user asked to read a.txt; it says hello.</summary>"
SUMMARY_PROMPT = "create a detailed summary of the conversation"


def _last_user_text(body: Mapping[str, Any]) -> str:
    for m in reversed(body.get("messages") or []):
        if isinstance(m, dict) and m.get("role") == "user":
            c = m.get("content")
            if isinstance(c, str):
                return c
            return "\n".join(b.get("text", "") for b in c if isinstance(b, dict) and b.get("type") == "text")
    return ""


class CompactionAware(Script):
    """A ``Script`` that answers Claude Code's compaction prompt with a summary."""

    def choose(self, headers: Mapping[str, str], body: Mapping[str, Any], api: str = "anthropic") -> Choice:
        if SUMMARY_PROMPT in _last_user_text(body):
            return Choice("compact", 0, Turn(text=SUMMARY))
        return super().choose(headers, body, api)


def session_script(workdir: Path, tracks: Mapping[str, Sequence[Turn]] | None = None) -> CompactionAware:
    """First prompt: Read a.txt, then "first done"; later prompts: "later done"."""
    return CompactionAware(main=[call("Read", file_path=str(workdir / "a.txt")), say("first done")],
                           tracks={"resume": [say("later done")], **(tracks or {})},
                           final_text="later done", detect_side=True, name="claude_code_breaks")


class Live:
    def __init__(self, tmp_path: Path, tracks: Mapping[str, Sequence[Turn]] | None = None, **emulator_opts: Any):
        self.workdir = (tmp_path / "proj").resolve()
        self.workdir.mkdir(parents=True, exist_ok=True)
        (self.workdir / "a.txt").write_text("hello\n")
        self.script = session_script(self.workdir, tracks)
        self._emu_cm = running_emulator(self.script, **emulator_opts)
        self.emu = None
        self.runtime: Runtime | None = None
        self.session_id: str | None = None

    def __enter__(self) -> Self:
        self.emu = self._emu_cm.__enter__()
        self.runtime = Runtime(Config.load(), {"anthropic_upstream": self.emu.url}, port=0).start()
        return self

    def __exit__(self, *exc) -> None:
        try:
            if self.runtime is not None:
                self.runtime.stop()
        finally:
            self._emu_cm.__exit__(*exc)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.runtime.port}"

    def run(self, prompt: str, **kw: Any) -> dict:
        """``claude -p`` through the proxy; asserts success; returns the JSON result."""
        if kw.pop("resume_session", False):
            kw["resume"] = self.session_id
        rc, res, out, err = run_claude(self.url, self.workdir, prompt, **kw)
        assert rc == 0 and res and not res.get("is_error"), (rc, out[-1500:], err[-1500:])
        self.session_id = self.session_id or res.get("session_id")
        return res

    def main(self) -> list:
        """The main conversation's billed requests (no side requests, no subagents)."""
        return rd.main_requests(self.emu.received)

    def steps(self) -> list[rd.Step]:
        """The three facts for each main request, the ledger flushed first."""
        self.settle()
        return rd.steps(self.main(), rd.ledger_rows())

    def settle(self, timeout: float = 10.0) -> None:
        """Wait until the ledger holds a row for every answered request (written on response end)."""
        want = sum(1 for r in self.emu.received if r.endpoint == "messages" and r.status == 200 and not r.error)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            path = dirs().database
            if path.exists() and len([r for r in rd.ledger_rows(path) if r["endpoint"] == "messages"]) >= want:
                return
            time.sleep(0.05)
