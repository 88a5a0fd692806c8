"""``scalpel spill`` and ``scalpel log`` against a real surgery (spill files + log in the ledger)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from scalpel_desktop.cli import main
from scalpel_desktop.config import KEYS
from scalpel_desktop.paths import dirs
from scalpel_desktop.store import db
from scalpel_desktop.store.spill import SpillStore
from scalpel_desktop.store.cutlog import CutLog, CutRecord
from scalpel_desktop.surgery.doom import find_doom_spans
from scalpel_desktop.surgery.surgeon import Surgeon
from scalpel_desktop.surgery.testing import SessionBuilder, file_text
from scalpel_desktop.wire.formats import view_for
from tests.support import REPO, run_cli as run

CWD = "/home/user/proj"


@pytest.fixture
def cuts():
    b = SessionBuilder(cwd=CWD)
    b.call("Read", {"file_path": f"{CWD}/a.py"}, file_text("a.py", 60) + "ünïcode ✓\n")
    b.call("Bash", {"command": "ls"}, [{"type": "text", "text": file_text("ls", 50)}, {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}}], False)
    b.call("Edit", {"file_path": f"{CWD}/a.py"}, "ok")
    b.call("Bash", {"command": "ls"}, [{"type": "text", "text": file_text("ls", 50)}, {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}}], False)
    for i in range(3):
        b.call("Glob", {"pattern": f"*{i}"}, "x")
    v = view_for("messages", b.body())
    conn = db.connect()
    s = Surgeon(SpillStore(), CutLog(conn))
    done = s.cut(v, find_doom_spans(v, None, 2), "sess-1234", "")
    s.commit()
    conn.close()
    assert len(done) == 2
    return done


def test_spill_ls_show_gc(cuts, capsys):
    code, out, _ = run(capsys, "spill", "ls", "--json")
    assert code == 0
    listed = json.loads(out)
    assert {e["sha256"] for e in listed} == {c.original_sha256 for c in cuts}
    code, out, _ = run(capsys, "spill", "ls")
    assert code == 0 and "2 files" in out
    read_cut = next(c for c in cuts if c.kind == "superseded_read")
    code, out, _ = run(capsys, "spill", "show", read_cut.original_sha256[:10])
    assert code == 0 and out == file_text("a.py", 60) + "ünïcode ✓\n"
    other = next(c for c in cuts if c is not read_cut)
    code, out, _ = run(capsys, "spill", "show", other.original_sha256)
    assert code == 0 and "[image image/png]" in out and "line 1 of ls" in out
    code, out, _ = run(capsys, "spill", "show", "--raw", other.original_sha256)
    assert out.encode() == SpillStore().get(other.original_sha256)
    code, _, err = run(capsys, "spill", "show", "ffff0000")
    assert code == 1 and err.startswith("scalpel: ")
    code, out, _ = run(capsys, "spill", "gc", "--json")
    assert code == 0 and json.loads(out)["removed"] == 0
    old = time.time() - 40 * 86400
    os.utime(SpillStore().path(read_cut.original_sha256), (old, old))
    # the conversation was seen just now: its spill files stay whatever their age, and gc says why
    code, out, _ = run(capsys, "spill", "gc", "--older-than", "30")
    assert code == 0 and out.startswith("Removed 0 spill files") and "Kept 1 of them" in out
    assert SpillStore().has(read_cut.original_sha256)
    code, out, err = run(capsys, "spill", "gc", "--older-than", "30", "--force")
    assert code == 0 and out.startswith("Removed 1 spill files")
    assert err.startswith("warning: --force removed 1 spill files") and "point nowhere" in err
    code, out, _ = run(capsys, "log", "--json")
    rows = {r["tool_use_id"]: r for r in json.loads(out)}
    assert rows[read_cut.tool_use_id]["spill_exists"] is False and rows[other.tool_use_id]["spill_exists"] is True


def _two_cuts(now: float) -> tuple[str, str]:
    """A cut 3 minutes old (its conversation live) and one of a conversation last seen 3 days ago."""
    store = SpillStore()
    fresh, stale = store.put(b"fresh output " * 500), store.put(b"stale output " * 500)
    conn = db.connect()
    CutLog(conn).record([CutRecord("toolu_fresh", "live-sess", "", now - 180, "duplicate", 900, fresh, 1, "e" * 64),
                         CutRecord("toolu_stale", "old-sess", "", now - 3 * 86400, "duplicate", 900, stale, 1,
                                   "e" * 64)])
    conn.close()
    return fresh, stale


def test_gc_older_than_0_keeps_the_spill_of_a_3_minute_old_cut(capsys):
    fresh, stale = _two_cuts(time.time())
    store = SpillStore()
    code, out, err = run(capsys, "spill", "gc", "--older-than", "0", "--json")
    assert code == 0 and err == ""
    got = json.loads(out)
    assert store.has(fresh) and not store.has(stale)
    assert (got["removed"], got["kept"], got["kept_live"], got["live_sessions"]) == (1, 1, 1, 1)
    assert (got["forced"], got["removed_live"], got["over_cap_bytes"]) == (False, 0, 0)
    assert got["kept_live_bytes"] == store.path(fresh).stat().st_size
    assert got["live_window_hours"] == KEYS["spill_keep_live_hours"].default + 1  # plus the 1 h TTL
    code, out, _ = run(capsys, "spill", "gc", "--older-than", "0", "--max-mb", "0")  # the cap spares it too
    assert code == 0 and store.has(fresh) and "Kept 1 of them" in out and "over the cap" in out
    code, out, err = run(capsys, "spill", "gc", "--older-than", "0", "--force", "--json")
    assert code == 0 and not store.has(fresh) and "point nowhere" in err
    assert (json.loads(out)["removed_live"], json.loads(out)["forced"]) == (1, True)


def test_gc_live_window_is_a_setting(capsys):
    fresh, stale = _two_cuts(time.time())
    assert run(capsys, "config", "set", "spill_keep_live_hours", "100")[0] == 0  # 3 days ago is live now
    code, out, _ = run(capsys, "spill", "gc", "--older-than", "0", "--json")
    assert code == 0 and json.loads(out)["kept_live"] == 2 and SpillStore().has(stale)
    code, _, err = run(capsys, "config", "set", "spill_keep_live_hours", "-1")
    assert code == 1 and "spill_keep_live_hours: '-1' is not valid" in err


def test_gc_removes_nothing_when_it_cannot_tell_what_is_live(capsys):
    fresh, _ = _two_cuts(time.time())
    database = dirs().database
    database.write_bytes(b"not a database " * 400)
    code, out, err = run(capsys, "spill", "gc", "--older-than", "0")
    assert code == 1 and out == "" and "cannot tell which spill files live conversations point at" in err
    assert SpillStore().has(fresh)
    assert run(capsys, "spill", "gc", "--older-than", "0", "--force")[0] == 0 and not SpillStore().has(fresh)


def test_log(cuts, capsys):
    code, out, _ = run(capsys, "log")
    assert code == 0 and "superseded_read" in out and "duplicate" in out and "2 cuts" in out
    code, out, _ = run(capsys, "log", "sess-1234", "--json", "--limit", "1")
    rows = json.loads(out)
    assert len(rows) == 1 and rows[0]["session"] == "sess-1234"
    assert rows[0]["spill_path"].endswith(rows[0]["original_sha256"])
    code, out, _ = run(capsys, "log", "sess")  # a unique prefix
    assert "2 cuts" in out
    code, out, err = run(capsys, "log", "other")  # a session the ledger has never seen is an error
    assert code != 0 and "no session 'other'" in err and "scalpel report --by session" in err


def test_empty_state_and_help(capsys):
    assert run(capsys, "log")[1].startswith("No cuts recorded yet")
    assert run(capsys, "spill", "ls")[1].startswith("No spill files")
    for argv in (["spill", "--help"], ["spill", "gc", "--help"], ["log", "--help"]):
        with pytest.raises(SystemExit) as e:
            main(argv)
        assert e.value.code == 0
        assert "usage:" in capsys.readouterr().out


def test_real_command_line(cuts):
    out = subprocess.run([sys.executable, "-m", "scalpel_desktop", "log", "--json"], cwd=REPO,
                         capture_output=True, text=True, timeout=60, env=os.environ.copy())
    assert out.returncode == 0, out.stderr
    assert {r["tool_use_id"] for r in json.loads(out.stdout)} == {c.tool_use_id for c in cuts}


def test_log_shows_each_cuts_decision_reason_boundary_and_payback(cuts, capsys):
    conn = db.connect()
    figures = {"boundary": "pinned", "read_stops_at": 4, "break": 7, "payback_x": 3.5, "turns_est": 9,
               "rewrite_tokens": 1200, "extra_usd": 0.001, "payback_usd": 0.0035}
    conn.execute("INSERT INTO requests (ts, session, agent, endpoint, decision, reason, figures) "
                 "VALUES (?, 'sess-1234', '', 'messages', 'cut+replayed', ?, ?)",
                 (time.time() - 5, "at death: 900 warm tokens repay a 1200-token rewrite 3.5x over 9 turns",
                  json.dumps(figures)))
    conn.commit()
    conn.close()
    code, out, _ = run(capsys, "log", "--json")
    rows = json.loads(out)
    assert code == 0 and all(r["boundary"] == "pinned" and r["payback_x"] == 3.5 for r in rows)
    assert rows[0]["read_stops_at"] == 4 and rows[0]["reason"].startswith("at death")
    code, out, _ = run(capsys, "log")
    assert "pinned boundary (read stops at message 4), repays 3.5x over 9 turns - at death" in out
