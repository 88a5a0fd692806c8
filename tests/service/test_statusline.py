"""`scalpel statusline` on inputs captured from Claude Code 2.1.332."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from scalpel_desktop.service.statusline import context_figures, render

FIXTURES = Path(__file__).parent / "fixtures"


def load(name):
    return json.loads((FIXTURES / name).read_text())


def test_context_and_cache_share_from_the_real_input():
    doc = load("statusline-after-turns.json")
    cur = doc["context_window"]["current_usage"]
    expected_ctx = cur["input_tokens"] + cur["cache_creation_input_tokens"] + cur["cache_read_input_tokens"]
    ctx, window, read = context_figures(doc)
    assert (ctx, window, read) == (expected_ctx, doc["context_window"]["context_window_size"], cur["cache_read_input_tokens"])
    line = render(doc)
    assert f"cache {round(100 * read / ctx)}%" in line
    assert f"({round(100 * ctx / window)}%)" in line
    assert "not routed" in line  # no ledger: this session never went through scalpel
    assert "\n" not in line and len(line) < 100


def test_startup_input_without_usage():
    assert render(load("statusline-startup.json")).startswith("ctx -")


def test_saved_this_session_and_today_come_from_the_ledger_reader(isolated_home):
    from scalpel_desktop import clock
    from scalpel_desktop.paths import dirs
    from scalpel_desktop.store.ledger import LedgerWriter
    from scalpel_desktop.store.ledger_queries import session_figures, today_savings, with_ledger

    doc = load("statusline-after-turns.json")
    now = time.time()
    w = LedgerWriter(dirs().database)
    for tokens, usd in ((9000, 0.03), (3400, 0.0125)):
        assert w.submit({"ts": now, "session": doc["session_id"], "endpoint": "messages", "input_tokens": 10,
                         "cache_read": 5, "realized_tokens": tokens, "realized_usd": usd})
    assert w.submit({"ts": now, "session": "other", "endpoint": "messages", "realized_tokens": 99999,
                     "realized_usd": 9})
    assert w.submit({"ts": clock.start_of_today(now) - 60, "session": doc["session_id"], "endpoint": "messages",
                     "realized_tokens": 1_000_000, "realized_usd": 3})  # yesterday: the session's, not today's
    assert w.flush(30)
    w.close()
    line = render(doc)
    session = with_ledger(None, session_figures, doc["session_id"])
    today = with_ledger(None, today_savings)
    assert (session.realized_tokens, today.tokens) == (1_012_400, 112_399)
    assert f"scalpel saved {session.realized_tokens:,} tok (${session.realized_usd:,.2f})" in line
    assert f"today {today.tokens:,} tok (${today.usd:,.2f})" in line
    assert "scalpel saved 1,012,400 tok ($3.04) · today 112,399 tok ($9.04)" in line


def test_context_from_the_ledger_when_claude_code_gives_none(isolated_home):
    from scalpel_desktop.paths import dirs
    from scalpel_desktop.store.ledger import LedgerWriter

    w = LedgerWriter(dirs().database)
    assert w.submit({"ts": time.time(), "session": "s1", "endpoint": "messages", "input_tokens": 100,
                     "cache_write_5m": 900, "cache_read": 19_000})
    assert w.flush(30)
    w.close()
    assert render({"session_id": "s1"}).startswith("ctx 20.0k · cache 95% · scalpel saved 0 tok ($0.00)")


def test_command_prints_one_line_and_never_fails(isolated_home):
    for raw in ((FIXTURES / "statusline-after-turns.json").read_bytes(), b"", b"{", b"null"):
        cp = subprocess.run([sys.executable, "-I", "-m", "scalpel_desktop.hooks_entry", "statusline"], input=raw,
                            capture_output=True, timeout=30, env=dict(os.environ))
        assert cp.returncode == 0 and cp.stderr == b""
        lines = cp.stdout.count(b"\n")
        assert lines == 1 if raw.startswith(b"{\n") else lines <= 1  # garbage: silence or one line


def test_window_from_the_model_table_when_claude_code_sends_none():
    doc = load("statusline-after-turns.json")
    del doc["context_window"]["context_window_size"]
    ctx, window, _ = context_figures(doc)
    assert window is None
    assert doc["model"]["id"] == "claude-opus-5-5"
    assert f"ctx {ctx / 1000:.1f}k/1M (" in render(doc)  # Opus 5.5 has a native 1M window
    doc["model"]["id"] = "claude-haiku-4-5"
    assert f"ctx {ctx / 1000:.1f}k/200.0k (" in render(doc)


def test_a_ledger_that_cannot_be_read_is_said_not_taken_for_not_routed(isolated_home):
    from scalpel_desktop.paths import dirs

    doc = load("statusline-after-turns.json")
    assert "not routed" in render(doc)  # no ledger yet: nothing went through scalpel
    dirs().database.parent.mkdir(parents=True, exist_ok=True)
    dirs().database.write_bytes(b"not a database, " * 512)
    line = render(doc)
    assert "ledger unreadable, today unknown" in line and "not routed" not in line


def test_a_dead_loopback_base_url_says_scalpel_down_and_what_to_run(isolated_home):
    import socket

    from tests.support import free_port

    doc = load("statusline-after-turns.json")
    port = free_port()
    line = render(doc, env={"ANTHROPIC_BASE_URL": f"http://127.0.0.1:{port}"})
    assert line.startswith(f"scalpel down: nothing answers at 127.0.0.1:{port}; run `scalpel start`"), line
    assert " · ctx " in line and "not routed" not in line
    with socket.socket() as listener:  # something answers the connect: no notice
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        line = render(doc, env={"ANTHROPIC_BASE_URL": f"http://127.0.0.1:{listener.getsockname()[1]}"})
    assert "scalpel down" not in line and line.startswith("ctx ")
    assert "scalpel down" not in render(doc, env={"ANTHROPIC_BASE_URL": "https://gateway.example.com"})
