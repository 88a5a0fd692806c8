"""Wall time of the Claude Code hook and statusline commands, as Claude Code runs them.

    python benchmarks/hooks_latency.py [runs]

Runs each command `runs` times (default 20) as a fresh process with a captured
input on stdin, in a temporary HOME/SCALPEL_HOME, and prints min/median/p90 in ms.
``ANTHROPIC_BASE_URL`` points at a loopback socket that listens, as a routed
session's does: session-start, user-prompt-submit and the statusline each pay
their one connect to it (the path taken on every prompt while the proxy runs).
"""

from __future__ import annotations

import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FIX = Path(__file__).resolve().parents[1] / "tests" / "service" / "fixtures"


def main(runs: int = 20) -> None:
    with tempfile.TemporaryDirectory() as tmp, socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1024)
        home = Path(tmp) / "home"
        (home / "project").mkdir(parents=True)
        (home / "project" / "notes.txt").write_text("Project notes\n")
        env = {**os.environ, "HOME": str(home), "SCALPEL_HOME": str(Path(tmp) / "scalpel"),
               "CLAUDE_CONFIG_DIR": str(home / ".claude"),
               "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{listener.getsockname()[1]}"}
        cases = {
            "post-tool-use": "hook-post-read.json",
            "pre-tool-use": "hook-pre-read.json",
            "session-start": "hook-session-start.json",
            "user-prompt-submit": "hook-user-prompt-submit.json",
            "statusline": "statusline-after-turns.json",
        }
        print(f"{'command':<18} {'min':>7} {'median':>7} {'p90':>7}  (ms, {runs} runs)")
        bare = []
        for _ in range(runs):
            t = time.perf_counter()
            subprocess.run([sys.executable, "-I", "-c", "pass"], env=env, check=True)
            bare.append((time.perf_counter() - t) * 1000)
        for event, name in cases.items():
            data = (FIX / name).read_text().replace("/home/user", str(home)).encode()
            times = []
            for _ in range(runs):
                t = time.perf_counter()
                subprocess.run([sys.executable, "-I", "-m", "scalpel_desktop.hooks_entry", event], input=data,
                               env=env, capture_output=True, check=True)
                times.append((time.perf_counter() - t) * 1000)
            times.sort()
            print(f"{event:<18} {times[0]:7.1f} {statistics.median(times):7.1f} {times[int(0.9 * (runs - 1))]:7.1f}")
        bare.sort()
        print(f"{'(bare python)':<18} {bare[0]:7.1f} {statistics.median(bare):7.1f} {bare[int(0.9 * (runs - 1))]:7.1f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20)
