"""Every CLI table fits 80 columns on a terminal and is full width when piped, ids and figures whole.

Each command runs as a real process on the dashboard's seeded ledger (written
through the real writers), twice: through a pipe, and in a pseudo-terminal of
80 columns (``TIOCSWINSZ``, no ``COLUMNS``: the program's own terminal
detection). On the terminal no line is wider than 80; nowhere does a figure
carry "…"; every full session id (``report --by session``), every cost and
every spill hash prefix (``log``) is printed whole, and what ``log`` shows can
be pasted back into ``spill show``, ``log`` and ``profile``.
"""

from __future__ import annotations

import fcntl
import os
import re
import struct
import subprocess
import sys
import termios

import pytest

from tests.support import REPO
from tests.tui.seed import NOW, seed_ledger

CORPUS = REPO.parent / "shared" / "corpus" / "transcripts" / "claude-code-log"
PROFILED = CORPUS / "-src-deep-manifest" / "a7da6a22-facc-4fcd-8bab-f83c87862004.jsonl"
COMMANDS = (["report"], ["report", "--by", "day"], ["report", "--by", "session"], ["report", "--by", "model"],
            ["log"], ["spill", "ls"], ["tools", "ls"], ["tools", "suggest"], ["tools", "history"])
CMD = [sys.executable, "-m", "scalpel_desktop"]


def piped(*argv: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    return subprocess.run([*CMD, *argv], capture_output=True, text=True, timeout=120, env=env, cwd=REPO)


def in_terminal(*argv: str, columns: int = 80) -> str:
    """stdout of the command in a pseudo-terminal of ``columns`` x 24 (stderr apart)."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env["TERM"] = "xterm-256color"
    proc = subprocess.Popen([*CMD, *argv], stdout=slave, stderr=subprocess.PIPE, stdin=slave, env=env, cwd=REPO)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    assert proc.wait(timeout=120) == 0, proc.stderr.read()
    text = b"".join(chunks).decode("utf-8", "replace").replace("\r\n", "\n")
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text)  # colour and cursor codes have no width


@pytest.fixture
def seeded(monkeypatch, isolated_home):
    monkeypatch.setenv("TZ", "UTC")
    return seed_ledger(NOW)


@pytest.mark.parametrize("argv", COMMANDS, ids=" ".join)
def test_fits_80_columns_and_pipes_at_full_width(seeded, argv):
    term = in_terminal(*argv)
    wide = [ln for ln in term.splitlines() if len(ln) > 80]
    assert not wide, "\n".join(wide)
    out = piped(*argv)
    assert out.returncode == 0, out.stderr
    for text in (term, out.stdout):
        assert "…" not in text
        assert text.strip()
    assert "not shown at" not in out.stdout  # piped: every column


@pytest.mark.parametrize("columns", [80, 100, 120])
def test_session_ids_and_costs_are_whole(seeded, columns):
    """Piped: one line per session with every column. On a terminal too narrow for that, each
    session id stands whole on its own line above its figures, so the figures keep the width:
    at 80 columns only the least telling ones drop (once 8 of the 13 figure columns went)."""
    from scalpel_desktop.accounting.prices import PriceTable
    from scalpel_desktop.accounting.report import build_report
    from scalpel_desktop.store.ledger_queries import open_readonly
    from scalpel_desktop.textable import usd

    conn = open_readonly()
    rep = build_report(conn, by="session", prices=PriceTable.load())
    conn.close()
    term = in_terminal("report", "--by", "session", columns=columns)
    assert not [ln for ln in term.splitlines() if len(ln) > columns], term
    lines = term.splitlines()
    for g in rep["groups"]:
        at = lines.index(g["key"])  # the id alone on its line, whole
        assert usd(g["cost_usd"]) in lines[at + 1].split() and f"{g['requests']:,}" in lines[at + 1].split()
    header = next(ln for ln in lines if ln.split()[:1] == ["reqs"])
    for title in ("cost", "cache%", "saved", "saved $", "c.read", "output"):
        assert title in header, header
    dropped = re.search(r"not shown at \d+ columns: ([^;]*);", " ".join(term.split()))
    assert dropped is None or set(dropped.group(1).split(", ")) <= {"wr 1h", "proj.", "proj. $", "±$"}
    piped_lines = piped("report", "--by", "session").stdout.splitlines()
    for g in rep["groups"]:
        line = next(ln for ln in piped_lines if ln.startswith(g["key"] + " "))
        assert usd(g["cost_usd"]) in line.split() and len(line.split()) == 14, line  # every column


def test_log_hashes_and_session_prefixes_paste_back(seeded):
    text = piped("log", "--limit", "200").stdout
    rows = [ln.split() for ln in text.splitlines()[2:] if re.match(r"\d\d-\d\d \d\d:\d\d ", ln)]
    assert len(rows) == min(200, len(seeded.cuts))
    by_hash = {c.original_sha256: c for c in seeded.cuts}
    for row in rows[:12]:
        prefix = row[6]
        cut = next(by_hash[h] for h in by_hash if h.startswith(prefix))
        assert [h for h in by_hash if h.startswith(prefix)] == [cut.original_sha256]  # unique
        if cut.original_sha256 in seeded.spilled:
            assert piped("spill", "show", prefix).returncode == 0
        assert cut.session.startswith(row[2])
        one = piped("log", row[2], "--json")
        assert one.returncode == 0 and {r["session"] for r in __import__("json").loads(one.stdout)} == {cut.session}
    read = [r for r in rows if r[3] == "Read"]
    assert read and all(r[-1].startswith(("~/", "/")) for r in read)  # the file a Read cut came from


def test_log_unknown_session_is_an_error(seeded):
    out = piped("log", "nosuchsession")
    assert out.returncode != 0
    assert "nosuchsession" in out.stderr and "scalpel report --by session" in out.stderr


def test_profile_and_bench_fit(seeded, tmp_path):
    if not PROFILED.is_file():
        pytest.skip("the shared corpus is not linked at ../shared")
    for argv in (["profile", str(PROFILED)], ["bench", str(PROFILED), "--sessions"]):
        term = in_terminal(*argv)
        assert not [ln for ln in term.splitlines() if len(ln) > 80], term
        assert "…" not in term
        out = piped(*argv)
        assert out.returncode == 0 and "…" not in out.stdout
    assert PROFILED.stem in piped("bench", str(PROFILED), "--sessions").stdout  # the id whole


def test_profile_takes_a_unique_prefix_and_refuses_an_ambiguous_one(tmp_path):
    from scalpel_desktop.bench.profile import ProfileError, resolve

    for sid in ("abcd1234-0000-4000-8000-000000000001", "abcd9999-0000-4000-8000-000000000002"):
        (tmp_path / "p").mkdir(exist_ok=True)
        (tmp_path / "p" / f"{sid}.jsonl").write_text("{}\n")
    assert resolve("abcd1", tmp_path).stem.startswith("abcd1234")
    with pytest.raises(ProfileError, match="ambiguous"):
        resolve("abcd", tmp_path)
