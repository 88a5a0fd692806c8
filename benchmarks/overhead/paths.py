"""The three paths (direct, bare, scalpel), each its own process, and the client that times them.

``start_paths`` starts an upstream (``nodelay`` or ``nagle``), a bare aiohttp
forward to it and ``scalpel start`` (default settings, the pipeline that
ships, ledger included, its own temporary SCALPEL_HOME; ``settings`` are
written with ``scalpel config set`` first, and ``history`` past conversations
seeded into its ledger). Each path is called on its own
keep-alive connection (``http.client``). ``settle`` waits until no server
process uses CPU: a call measured "after idle" never overlaps work a path
still does for the previous one.
"""

from __future__ import annotations

import http.client
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from overhead.upstreams import END

NAMES = ("direct", "bare", "scalpel")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listening on {port}")


def cpu_ms(pid: int) -> float:
    """User + system CPU time of process ``pid`` (all its threads), ms."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000.0 / os.sysconf("SC_CLK_TCK")


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def settle(pids: list[int], quiet_ms: float = 20.0, limit_s: float = 3.0) -> None:
    """Until no server process has used CPU for ``quiet_ms``."""
    deadline = time.monotonic() + limit_s
    last, since = [cpu_ms(p) for p in pids], time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.005)
        now = [cpu_ms(p) for p in pids]
        if now != last:
            last, since = now, time.monotonic()
        elif (time.monotonic() - since) * 1000 >= quiet_ms:
            return


class PathClient:
    """One path: its name, port, server pid and one keep-alive connection to it."""

    def __init__(self, name: str, port: int, pid: int):
        self.name, self.port, self.pid = name, port, pid
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)

    def call(self, body: bytes, headers: dict) -> float:
        """Seconds from the send of the request to the last byte of its answer read."""
        t0 = time.perf_counter()
        self.conn.request("POST", "/v1/messages?beta=true", body=body, headers=headers)
        resp = self.conn.getresponse()
        data = resp.read()
        took = time.perf_counter() - t0
        if resp.status != 200 or not data.endswith(END):
            raise RuntimeError(f"{self.name}: HTTP {resp.status}")
        return took


def seed_history(env: dict, conversations: int, requests: int = 100) -> None:
    """Past conversations in the bench home's ledger (``requests`` each, 10 s apart), as a user's
    own history: the warm policies then expect a conversation to go on, and a first sighting
    could repay a warm cut priced at its worst case (it is analysed on the request path)."""
    code = ("import sys\n"
            "from scalpel_desktop.paths import dirs\n"
            "from scalpel_desktop.store.ledger import LedgerWriter\n"
            "n, k = int(sys.argv[1]), int(sys.argv[2])\n"
            "w = LedgerWriter(dirs().database)\n"
            "for c in range(n):\n"
            "    for i in range(k):\n"
            "        w.submit({'ts': 1.7e9 + c * 1e5 + i * 10.0, 'session': f'past-{c}', 'api': 'anthropic',\n"
            "                  'endpoint': 'messages', 'status': 200, 'body_bytes': 1000, 'sent_bytes': 1000,\n"
            "                  'decision': 'unchanged', 'total_ms': 1000.0})\n"
            "assert w.flush(60)\n"
            "w.close()\n")
    subprocess.run([sys.executable, "-c", code, str(conversations), str(requests)], env=env, check=True)


def start_paths(script: str, style: str, procs: list, settings: dict[str, str] | None = None,
                history: int = 0) -> list[PathClient]:
    """direct, bare and scalpel for an upstream of ``style``; the processes go to ``procs``."""
    up, bare, sc = free_port(), free_port(), free_port()
    upstream = f"http://127.0.0.1:{up}"
    home = tempfile.mkdtemp(prefix="scalpel-bench-")
    env = dict(os.environ, SCALPEL_HOME=home, HOME=home)
    if history:
        seed_history(env, history)
    for key, value in (settings or {}).items():
        subprocess.run([sys.executable, "-m", "scalpel_desktop", "config", "set", key, value], env=env, check=True,
                       stdout=subprocess.DEVNULL)
    started = [
        subprocess.Popen([sys.executable, script, "--serve-upstream", str(up), style]),
        subprocess.Popen([sys.executable, script, "--serve-bare", str(bare), upstream]),
        subprocess.Popen([sys.executable, "-m", "scalpel_desktop", "start", "--quiet", "--port", str(sc),
                          "--anthropic-upstream", upstream], env=env, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL),
    ]
    procs.extend(started)
    for port in (up, bare, sc):
        wait_port(port)
    return [PathClient(n, port, p.pid) for n, port, p in zip(NAMES, (up, bare, sc), started)]


def stop_all(procs: list) -> None:
    for p in procs:
        p.terminate()
    for p in procs:
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
