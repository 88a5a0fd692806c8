"""Issue 25 steps 4-5, "never lose a row": a real proxy process under a long ledger lock and hard stops.

Run: ``python benchmarks/never_lose_a_row.py [--against REV] [--lock 60] [--burst 80] [--big 30]
[--size 3.0] [--twice 140] [--only lock,start,kill,twice]``

Every scenario runs ``scalpel start`` as its own process, in a temporary
home, against the repo's emulator (``scalpel emulator``, its own process);
the lock is another process holding ``BEGIN EXCLUSIVE`` on the ledger
(``tests/support/db_lock.py``); the signals are real. ``--against REV`` runs
each scenario a second time with the proxy taken from that commit (``git
archive``, read only; the emulator and the client stay this tree's) and
prints the two side by side. A row is counted kept when it is in the ledger
or, for a tree that has one, in the journal beside it (``store/row_journal.py``:
written at the next start).

1. lock: the ledger held for ``--lock`` s while a request goes every
   ``lock/51`` s, then 3 more after the release: rows kept, how long after
   the release they were all in, whether recording is still on.
2. start: the ledger held for ``--lock`` s from before the proxy starts, a
   request every second: when the proxy first answered, how many requests
   it refused, when surgery was on after the release, rows kept.
3. kill: a burst of ``--burst`` requests (``--big`` of them first sightings
   of ``--size`` MB, the real Claude Code 2.1.332 capture grown by re-reads,
   8 at a time), SIGTERM once the last is answered, SIGKILL at 10 s (as systemd's
   ``TimeoutStopSec=10`` did): time to exit, rows kept.
4. twice: a burst of ``--twice`` requests, then two SIGTERMs 0.3 s apart:
   exit status, time to exit, rows kept.

Nothing is asserted (the tests assert, with short locks): figures only.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "support"))

from db_lock import exclusive_lock  # noqa: E402
from overhead.bodies import CAPTURE, Conversation, first_sighting, load_capture  # noqa: E402
from overhead.paths import free_port, wait_port  # noqa: E402

PY = sys.executable
SMALL_HEADERS = {"content-type": "application/json", "anthropic-version": "2023-06-01", "x-api-key": "sk-ant-bench"}


class Tree:
    """Where the proxy's code comes from: this checkout, or a commit extracted with ``git archive``."""

    def __init__(self, rev: str | None):
        self.rev = rev
        self.label = "this tree" if rev is None else f"at {rev}"
        self.root = REPO
        if rev is not None:
            self.root = Path(tempfile.mkdtemp(prefix="scalpel-baseline-"))
            archive = subprocess.run(["git", "-C", str(REPO), "archive", rev], check=True, capture_output=True).stdout
            subprocess.run(["tar", "-x", "-C", str(self.root)], input=archive, check=True)


class Home:
    """One scenario's temporary home, its emulator and its proxy process."""

    def __init__(self, tree: Tree, emulator_url: str):
        self.tree, self.emu = tree, emulator_url
        root = Path(tempfile.mkdtemp(prefix="scalpel-row-"))
        (root / "home").mkdir()
        self.env = dict(os.environ, HOME=str(root / "home"), SCALPEL_HOME=str(root / "scalpel"),
                        CLAUDE_CONFIG_DIR=str(root / "home" / ".claude"), XDG_CONFIG_HOME=str(root / "xdg-config"),
                        XDG_DATA_HOME=str(root / "xdg-data"), XDG_STATE_HOME=str(root / "xdg-state"),
                        XDG_CACHE_HOME=str(root / "xdg-cache"), PYTHONPATH=str(tree.root))
        for k in ("ANTHROPIC_BASE_URL", "SCALPEL_ANTHROPIC_UPSTREAM", "SCALPEL_TEST_CLOCK_FILE"):
            self.env.pop(k, None)
        self.db = root / "scalpel" / "data" / "ledger.sqlite3"
        self.log = root / "proxy.log"
        self.port = free_port()
        self.proc: subprocess.Popen | None = None

    def create_ledger(self) -> None:
        code = "from scalpel_desktop.store.db import connect; from scalpel_desktop.paths import dirs; " \
               "connect().close(); print(dirs().database)"
        out = subprocess.run([PY, "-c", code], env=self.env, check=True, capture_output=True, text=True).stdout
        self.db = Path(out.strip())

    def start(self) -> float:
        self.proc = subprocess.Popen([PY, "-m", "scalpel_desktop", "start", "--quiet", "--port", str(self.port),
                                      "--anthropic-upstream", self.emu], env=self.env, stdout=subprocess.DEVNULL,
                                     stderr=open(self.log, "wb"), cwd=str(self.tree.root))
        return time.monotonic()

    def status(self) -> dict:
        cp = subprocess.run([PY, "-m", "scalpel_desktop", "status", "--json"], env=self.env, capture_output=True,
                            text=True, timeout=60, cwd=str(self.tree.root))
        try:
            return json.loads(cp.stdout)
        except ValueError:
            return {}

    def stop(self, timeout: float = 30.0) -> int | None:
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()

    def kept(self) -> int:
        """Rows in the ledger, plus those only in its journal (written at the next start)."""
        db_uids: set = set()
        n = 0
        if self.db.exists():
            conn = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True, timeout=30)
            try:
                n = conn.execute("SELECT count(*) FROM requests").fetchone()[0]
                cols = {r[1] for r in conn.execute("PRAGMA table_info(requests)")}
                if "uid" in cols:
                    db_uids = {r[0] for r in conn.execute("SELECT uid FROM requests WHERE uid IS NOT NULL")}
            except sqlite3.Error:
                pass
            finally:
                conn.close()
        journal: set = set()
        for path in (self.db.with_name(self.db.name + "-rows.jsonl"),
                     self.db.with_name(self.db.name + "-rows.jsonl.replaying")):
            if path.exists():
                for line in path.read_bytes().splitlines():
                    try:
                        journal.add(json.loads(line)["uid"])
                    except (ValueError, KeyError, TypeError):
                        pass
        return n + len(journal - db_uids)

    def rows_in_db(self) -> int:
        try:
            conn = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True, timeout=1)
            try:
                return conn.execute("SELECT count(*) FROM requests").fetchone()[0]
            finally:
                conn.close()
        except sqlite3.Error:
            return -1


def small(port: int, i: int, timeout: float = 60.0) -> int:
    """One small request; its HTTP status (0: refused or no answer)."""
    body = json.dumps({"model": "claude-sonnet-4-6", "max_tokens": 16,
                       "messages": [{"role": "user", "content": f"hello {i} {time.time()}"}]}).encode()
    return post(port, body, SMALL_HEADERS, timeout)


def post(port: int, body: bytes, headers: dict, timeout: float = 120.0) -> int:
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        conn.request("POST", "/v1/messages?beta=true", body=body, headers=headers)
        resp = conn.getresponse()
        resp.read()
        conn.close()
        return resp.status
    except OSError:
        return 0


def big_bodies(n: int, size_mb: float) -> list[tuple[bytes, dict]]:
    """First sightings of one conversation grown by re-reads (its early reads superseded: an analysis
    with something to find; the capture's own pairs would carry more cache_control blocks than the API allows)."""
    Conversation.growth = "rereads"
    capture = load_capture()
    conv = Conversation(capture, int(size_mb * 1e6), "000000")
    body = conv.body()
    return [first_sighting(body, conv, k + 1) for k in range(n)]


def burst(port: int, total: int, bigs: list[tuple[bytes, dict]]) -> int:
    """``total`` requests (the big ones spread among them), 8 at a time; how many were answered 200."""
    jobs = []
    step = max(1, total // max(1, len(bigs)))
    big_iter = iter(bigs)
    for i in range(total):
        b = next(big_iter, None) if i % step == 0 else None
        jobs.append(b)
    with ThreadPoolExecutor(8) as pool:
        codes = list(pool.map(lambda ib: post(port, *ib[1]) if ib[1] else small(port, ib[0]), enumerate(jobs)))
    return sum(c == 200 for c in codes)


# -- the scenarios -----------------------------------------------------------------


def lock_scenario(tree: Tree, emu: str, lock_s: float) -> dict:
    h = Home(tree, emu)
    h.create_ledger()
    h.start()
    wait_port(h.port, 120)
    sent = 0
    with exclusive_lock(h.db):
        t0 = time.monotonic()
        for i in range(51):
            while time.monotonic() < t0 + i * lock_s / 51:
                time.sleep(0.02)
            small(h.port, i)
            sent += 1
        while time.monotonic() < t0 + lock_s:
            time.sleep(0.05)
    released = time.monotonic()
    for i in range(3):
        small(h.port, 100 + i)
        sent += 1
    landed = None
    while time.monotonic() < released + 30:
        if h.rows_in_db() >= sent:
            landed = time.monotonic() - released
            break
        time.sleep(0.1)
    st = h.status()
    h.stop()
    return {"rows kept": f"{h.kept()} of {sent}",
            "all in the ledger after the release": f"{landed:.1f} s" if landed is not None else "never (30 s)",
            "recording after": "on" if st.get("recording", True) else "OFF"}


def start_scenario(tree: Tree, emu: str, lock_s: float) -> dict:
    h = Home(tree, emu)
    h.create_ledger()
    sent = answered = 0
    first = None
    surgery_locked = None
    with exclusive_lock(h.db):
        t_lock = time.monotonic()
        started = h.start()
        i = 0
        while time.monotonic() < t_lock + lock_s:
            if first is not None and surgery_locked is None and time.monotonic() > started + 3:
                surgery_locked = bool(h.status().get("surgery_active"))
            code = small(h.port, i, timeout=lock_s)
            i += 1
            sent += 1
            if code == 200:
                answered += 1
                if first is None:
                    first = time.monotonic() - started
            time.sleep(1.0 if first is not None else 0.25)
    released = time.monotonic()
    surgery_on = None
    while time.monotonic() < released + 40:
        st = h.status()
        if st.get("surgery_active"):
            surgery_on = time.monotonic() - released
            break
        time.sleep(0.5)
    h.stop()
    return {"first answer after start": f"{first:.1f} s" if first is not None else "never",
            "requests answered while locked": f"{answered} of {sent}",
            "surgery on while locked (3 s after start)": {None: "?", True: "yes", False: "no"}[surgery_locked],
            "surgery on after the release": f"{surgery_on:.1f} s" if surgery_on is not None else "never (40 s)",
            "rows kept (of answered)": f"{h.kept()} of {answered}"}


def kill_scenario(tree: Tree, emu: str, total: int, bigs: list) -> dict:
    h = Home(tree, emu)
    h.start()
    wait_port(h.port, 120)
    ok = burst(h.port, total, bigs)
    t0 = time.monotonic()
    h.proc.send_signal(signal.SIGTERM)
    try:
        code = h.proc.wait(10)
        how = f"exit {code}"
    except subprocess.TimeoutExpired:
        h.proc.kill()
        h.proc.wait()
        how = "SIGKILL at 10 s"
    took = time.monotonic() - t0
    return {"answered": f"{ok} of {total}", "SIGTERM to exit": f"{took:.1f} s ({how})",
            "rows kept": f"{h.kept()} of {ok}"}


def twice_scenario(tree: Tree, emu: str, total: int, bigs: list) -> dict:
    h = Home(tree, emu)
    h.start()
    wait_port(h.port, 120)
    ok = burst(h.port, total, bigs)
    t0 = time.monotonic()
    h.proc.send_signal(signal.SIGTERM)
    time.sleep(0.3)
    if h.proc.poll() is None:
        h.proc.send_signal(signal.SIGTERM)
    try:
        code = h.proc.wait(60)
    except subprocess.TimeoutExpired:
        h.proc.kill()
        code = h.proc.wait()
    took = time.monotonic() - t0
    return {"exit status": str(code), "first SIGTERM to exit": f"{took:.1f} s", "rows kept": f"{h.kept()} of {ok}"}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--against", metavar="REV", help="also run each scenario with the proxy of this commit")
    ap.add_argument("--lock", type=float, default=60.0, help="seconds the ledger is held (lock, start)")
    ap.add_argument("--burst", type=int, default=80)
    ap.add_argument("--big", type=int, default=30, help="first sightings of --size MB among the bursts")
    ap.add_argument("--size", type=float, default=3.0, help="MB")
    ap.add_argument("--twice", type=int, default=140, help="requests before the two SIGTERMs")
    ap.add_argument("--only", default="lock,start,kill,twice")
    a = ap.parse_args(argv)
    if not CAPTURE.exists():
        print(f"needs the real Claude Code 2.1.332 capture at {CAPTURE} (../shared/corpus)", file=sys.stderr)
        return 2
    trees = [Tree(None)] + ([Tree(a.against)] if a.against else [])
    bigs = big_bodies(a.big, a.size)
    port = free_port()
    emu_home = tempfile.mkdtemp(prefix="scalpel-emu-")
    emu = subprocess.Popen([PY, "-m", "scalpel_desktop", "emulator", "--port", str(port), "--no-auth"],
                           env=dict(os.environ, HOME=emu_home, SCALPEL_HOME=emu_home), stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    try:
        wait_port(port, 60)
        url = f"http://127.0.0.1:{port}"
        scenarios = {
            "lock": (f"1. the ledger held {a.lock:g} s while requests go on", lambda t: lock_scenario(t, url, a.lock)),
            "start": (f"2. the ledger held {a.lock:g} s from before the start",
                      lambda t: start_scenario(t, url, a.lock)),
            "kill": (f"3. SIGTERM after a burst of {a.burst} ({a.big} first sightings of {a.size:g} MB), "
                     "SIGKILL at 10 s", lambda t: kill_scenario(t, url, a.burst, bigs)),
            "twice": (f"4. two SIGTERMs 0.3 s apart after a burst of {a.twice}",
                      lambda t: twice_scenario(t, url, a.twice, bigs)),
        }
        for name in a.only.split(","):
            title, run = scenarios[name]
            results = []
            for tree in trees:
                results.append(run(tree))
                print(f"  ({title.split('.')[0]}. {tree.label}: done)", file=sys.stderr, flush=True)
            print(f"\n{title}\n")
            print("| | " + " | ".join(t.label for t in trees) + " |")
            print("|---|" + "---|" * len(trees))
            for key in results[0]:
                print(f"| {key} | " + " | ".join(r.get(key, "") for r in results) + " |")
            sys.stdout.flush()
    finally:
        emu.terminate()
        emu.wait(10)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
