"""What is off or failing in a running proxy, said in words a user can act on.

The runtime knows its degraded states as facts scattered over its parts (the
ledger writer turned recording off, the composer left surgery and the tool
filter out because the database could not be opened, the surgeon's spill hit
a full disk, requests gave up waiting on their conversation's analysis, ...).
``degraded_states`` turns those facts into one list of ``Degraded`` items,
each with a stable ``code``, a ``severity``, a one-line ``reason`` and a
``fix``; ``Runtime.status`` answers it as ``degraded`` so that ``scalpel
status``, ``doctor``, the tray and the dashboard all say the same thing, from
the proxy's real state rather than from a frontend's guess.

Severities (the words ``doctor`` uses for its checks):

- ``fail``: a feature is off or failing now (recording, surgery, the tool
  filter, the spill), or the proxy is restarting;
- ``warn``: nothing is off yet, but something needs a look (the spill dir
  past ``spill_max_mb``, requests that waited out ``order_wait_s``);
- ``info``: off by the user's own choice (paused, ``policy off``).

Codes: ``proxy-restarting``, ``ledger-unreadable``, ``ledger-locked``,
``recording-off``, ``surgery-off``, ``tool-filter-off``, ``spill-failing``,
``spill-over-cap``, ``order-waits``.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path

from scalpel_desktop.paths import dirs, home_relative
from scalpel_desktop.store.row_journal import journal_path

MB = 1024 * 1024
SPILL_SIZE_TTL_S = 60.0  # the spill dir is walked at most this often (status is polled every 2 s)


@dataclass(frozen=True)
class Degraded:
    code: str
    severity: str  # fail | warn | info
    label: str  # two or three words for a tray tooltip or a dashboard header ("recording off")
    reason: str  # one line: what is wrong, and why
    fix: str  # what to do

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class HealthFacts:
    """Everything ``degraded_states`` looks at, read from the runtime's parts at one moment."""

    ledger_path: Path
    spill_dir: Path
    state: str = "running"  # the runtime's state (error: crashed, restarting)
    last_crash: str = ""
    paused: bool = False
    policy: str = "death"
    tool_filter_asked: bool = False
    recording: bool | None = True  # None: no ledger writer
    recording_error: str | None = None
    ledger_busy_since: float | None = None
    ledger_pending: int = 0  # rows waiting in memory
    ledger_journaled: int = 0  # rows waiting in the journal beside the ledger (store/row_journal.py)
    features_error: str | None = None  # why surgery and the tool filter are not in the pipeline (yet)
    surgery_running: bool = True
    tool_filter_running: bool = True
    today_error: str = ""  # why today's figures could not be read ("": they could)
    spill_problem: str | None = None
    spill_bytes: int | None = None
    spill_max_mb: int | None = None
    order_waits: dict | None = None
    order_wait_s: float = 10.0
    now: float = 0.0


def _locked(error: str) -> bool:
    e = error.lower()
    return "locked" in e or "busy" in e


def ledger_fix(error: str, path: Path) -> str:
    """What to do about a ledger that fails with ``error``, by what the error says."""
    e = error.lower()
    p, d = home_relative(path), home_relative(path.parent)
    if _locked(error):
        return f"close the program that holds {p} open (a sqlite3 shell, a backup or sync tool)"
    if path.is_dir():
        return f"{p} is a folder, not a file: move it aside (`mv {p} {p}.folder`), then restart scalpel"
    if "not a database" in e or "malformed" in e or "corrupt" in e:
        return f"move the broken file aside (`mv {p} {p}.broken`) and restart scalpel: a new ledger is started"
    if "full" in e or "no space" in e:
        return f"free disk space under {d}, then restart scalpel"
    refused = (path.parent.is_dir() and not os.access(path.parent, os.W_OK)) or \
        (path.is_file() and not os.access(path, os.W_OK))  # what the OS says now (never true for root)
    if refused or "readonly" in e or "read-only" in e or "permission" in e:
        return f"make {d} and {p} writable (`chmod u+w {d} {p}`), then restart scalpel"
    return (f"{p} must be a SQLite file scalpel can read and write in a writable {d} (not a directory, not a "
            f"mount that refuses writes); fix that, or move it aside, then restart scalpel")


def _clock(ts: float | None) -> str:
    return datetime.fromtimestamp(ts).strftime("%H:%M:%S") if ts else "?"


def _ledger_items(f: HealthFacts) -> list[Degraded]:
    out: list[Degraded] = []
    p = home_relative(f.ledger_path)
    if f.ledger_busy_since is not None:
        held = max(0.0, f.now - f.ledger_busy_since)
        out.append(Degraded("ledger-locked", "fail", "ledger locked",
                            f"the ledger {p} is locked by another program ({held:.0f} s so far): "
                            f"{_waiting(f)}, written when it frees", ledger_fix("locked", f.ledger_path)))
    elif f.today_error:
        code = "ledger-locked" if _locked(f.today_error) else "ledger-unreadable"
        out.append(Degraded(code, "fail", "ledger locked" if code == "ledger-locked" else "ledger unreadable",
                            f"the ledger {p} cannot be read ({f.today_error}): today's figures "
                            "are unknown", ledger_fix(f.today_error, f.ledger_path)))
    if f.recording is False:
        why = f.recording_error or "the ledger could not be written"
        out.append(Degraded("recording-off", "fail", "recording off",
                            f"recording is off: the ledger could not be written ({why}); {_waiting(f)}, "
                            "written once it can be (tried again every 30 s)", ledger_fix(why, f.ledger_path)))
    return out


def _waiting(f: HealthFacts) -> str:
    """``12 row(s) waiting (10 in the journal ~/…/ledger.sqlite3-rows.jsonl)``."""
    n = f.ledger_pending + f.ledger_journaled
    if not f.ledger_journaled:
        return f"{n:,} row(s) waiting"
    return f"{n:,} row(s) waiting ({f.ledger_journaled:,} in the journal {home_relative(journal_path(f.ledger_path))})"


def _feature_items(f: HealthFacts) -> list[Degraded]:
    out: list[Degraded] = []
    why = f.features_error or "the stage is not in the pipeline"
    fix = ledger_fix(why, f.ledger_path)
    if not f.surgery_running:
        out.append(Degraded("surgery-off", "fail", "surgery off",
                            f"surgery is off: the ledger database cannot be used ({why}); requests are "
                            "forwarded unchanged, and surgery comes on by itself once it can be (tried again)",
                            fix))
    elif f.paused:
        out.append(Degraded("surgery-off", "info", "paused", "surgery is off: paused (pure pass-through)",
                            "`scalpel resume`"))
    elif f.policy == "off":
        out.append(Degraded("surgery-off", "info", "policy off",
                            "no new cuts: policy is off (earlier cuts are still replayed)",
                            "`scalpel policy death` (the default)"))
    if f.tool_filter_asked and not f.tool_filter_running:
        out.append(Degraded("tool-filter-off", "fail", "tool filter off",
                            "the tool filter is on in the settings but not running: the ledger database "
                            f"cannot be used ({why}); it comes on by itself once it can be", fix))
    return out


def _spill_items(f: HealthFacts) -> list[Degraded]:
    out: list[Degraded] = []
    d = home_relative(f.spill_dir)
    if f.spill_problem:
        full = any(w in f.spill_problem.lower() for w in ("no space", "disk quota", "errno 28", "full"))
        what = "the disk is full" if full else "spill files cannot be written"
        fix = (f"free disk space under {d} (`scalpel spill gc` removes old spill files)" if full
               else f"make {d} a writable folder")
        out.append(Degraded("spill-failing", "fail", "disk full" if full else "spill failing",
                            f"no new cuts: {what} ({f.spill_problem}); no spill, no cut", fix))
    if f.spill_bytes is not None and f.spill_max_mb and f.spill_bytes > f.spill_max_mb * MB:
        out.append(Degraded("spill-over-cap", "warn", "spill over its cap",
                            f"the spill dir {d} holds {f.spill_bytes / MB:,.1f} MB, over its cap "
                            f"(spill_max_mb = {f.spill_max_mb:,})",
                            "`scalpel spill gc` (removes the oldest first), or raise the cap: "
                            "`scalpel config set spill_max_mb N`"))
    return out


def _order_items(f: HealthFacts) -> list[Degraded]:
    w = f.order_waits or {}
    n = int(w.get("timed_out") or 0)
    if not n:
        return []
    return [Degraded("order-waits", "warn", "order waits",
                     f"{n:,} request(s) since start waited the full {f.order_wait_s:g} s (order_wait_s) for the "
                     f"analysis of their conversation's previous request, then went without it "
                     f"(last at {_clock(w.get('last_timeout_at'))})",
                     "nothing to do for the requests (they were forwarded); if it keeps happening, "
                     f"send the log ({home_relative(dirs().logs / 'proxy.log')}) with a report")]


def degraded_states(f: HealthFacts) -> list[Degraded]:
    """Every degraded state in ``f``, the most serious first."""
    out: list[Degraded] = []
    if f.state == "error":
        out.append(Degraded("proxy-restarting", "fail", "proxy restarting",
                            f"the proxy crashed ({f.last_crash or 'unknown error'}) and is restarting",
                            "see the log; `scalpel doctor` once it answers again"))
    out += _ledger_items(f) + _feature_items(f) + _spill_items(f) + _order_items(f)
    rank = {"fail": 0, "warn": 1, "info": 2}
    return sorted(out, key=lambda d: rank.get(d.severity, 3))


class SpillMeter:
    """The spill dir's size in bytes, walked at most every ``ttl_s`` seconds (None: cannot be read)."""

    def __init__(self, directory: Path, ttl_s: float = SPILL_SIZE_TTL_S):
        self.directory = Path(directory)
        self.ttl_s = ttl_s
        self._lock = threading.Lock()
        self._at = float("-inf")
        self._bytes: int | None = None

    def bytes(self) -> int | None:
        with self._lock:
            if time.monotonic() - self._at >= self.ttl_s:
                self._bytes = _tree_bytes(self.directory)
                self._at = time.monotonic()
            return self._bytes


def _tree_bytes(root: Path) -> int | None:
    """The sizes of the files under ``root`` (two levels: ``<sha[:2]>/<sha>``), 0 when there is none."""
    if not root.is_dir():
        return 0
    total = 0
    try:
        with os.scandir(root) as top:
            for sub in top:
                if not sub.is_dir(follow_symlinks=False):
                    continue
                with os.scandir(sub.path) as files:
                    for entry in files:
                        try:
                            if entry.is_file(follow_symlinks=False):
                                total += entry.stat(follow_symlinks=False).st_size
                        except OSError:
                            continue
    except OSError:
        return None
    return total
