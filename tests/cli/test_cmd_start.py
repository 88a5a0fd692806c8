"""``scalpel start`` as a real process: status from another process, a second start refused, stop."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import anthropic

from scalpel_desktop.emulator.testing import running_emulator
from tests.support import free_port

SCALPEL = [sys.executable, "-m", "scalpel_desktop"]


def scalpel(*args: str, timeout: float = 30) -> subprocess.CompletedProcess:
    return subprocess.run(SCALPEL + list(args), capture_output=True, text=True, timeout=timeout, env=dict(os.environ))


def test_start_status_second_start_stop(monkeypatch):
    with running_emulator() as emu:
        port = free_port()
        # the environment names the upstream; the flag wins for anthropic, the env for openai
        monkeypatch.setenv("SCALPEL_ANTHROPIC_UPSTREAM", "http://127.0.0.1:9")
        monkeypatch.setenv("SCALPEL_OPENAI_UPSTREAM", emu.url)
        proc = subprocess.Popen(
            SCALPEL + ["start", "--port", str(port), "--anthropic-upstream", emu.url],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ),
        )
        try:
            banner = [proc.stdout.readline() for _ in range(5)]
            assert f"listening on http://127.0.0.1:{port}" in banner[0], banner
            assert any(f"ANTHROPIC_BASE_URL=http://127.0.0.1:{port}" in line for line in banner)
            assert any(f"OPENAI_BASE_URL=http://127.0.0.1:{port}/openai/v1" in line for line in banner)
            assert any(f"anthropic -> {emu.url}" in line and f"openai -> {emu.url}" in line for line in banner)

            st = scalpel("status", "--json")
            assert st.returncode == 0, st.stderr
            info = json.loads(st.stdout)
            assert info["running"] is True and info["port"] == port and info["pid"] == proc.pid
            assert info["requests"] == 0

            client = anthropic.Anthropic(base_url=f"http://127.0.0.1:{port}", api_key="sk-x", max_retries=0)
            client.messages.create(model="claude-sonnet-4-6", max_tokens=20, messages=[{"role": "user", "content": "hi"}])
            assert emu.received[-1].path == "/v1/messages"
            info = json.loads(scalpel("status", "--json").stdout)
            assert info["requests"] == 1 and info["tokens_in"] == emu.bills[-1].prompt_tokens
            text = scalpel("status").stdout
            assert f"running on http://127.0.0.1:{port} (pid {proc.pid})" in text and "requests  1" in text

            second = scalpel("start", "--port", str(free_port()))
            assert second.returncode == 1
            assert f"already running (pid {proc.pid}, port {port}" in second.stderr

            assert scalpel("pause").returncode == 0
            assert json.loads(scalpel("status", "--json").stdout)["state"] == "paused"
            assert scalpel("resume").returncode == 0

            stop = scalpel("stop")
            assert stop.returncode == 0 and f"stopped (pid {proc.pid})" in stop.stdout
            assert proc.wait(timeout=10) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        rest = proc.stdout.read()
        assert "scalpel stopped." in rest
        after = scalpel("status", "--json")
        assert after.returncode == 3 and json.loads(after.stdout)["running"] is False


def test_sigterm_stops_cleanly():
    import signal

    port = free_port()
    proc = subprocess.Popen(SCALPEL + ["start", "--port", str(port)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=dict(os.environ))
    try:
        assert "listening" in proc.stdout.readline()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert scalpel("status").returncode == 3


def test_bad_port_setting_is_a_clear_error():
    out = scalpel("start", "--port", "70000")
    assert out.returncode == 1 and "port" in out.stderr and "70000" in out.stderr


def _seed_today_and_yesterday() -> None:
    """Through the real writer: two rows today, one yesterday (left out of "today")."""
    from scalpel_desktop import clock
    from scalpel_desktop.paths import dirs
    from scalpel_desktop.store.ledger import LedgerWriter

    now = clock.now()
    w = LedgerWriter(dirs().database)
    for ts, tokens, usd in ((now - 5, 12_000, 0.036), (now - 1, 345, 0.0011),
                            (clock.start_of_today(now) - 1, 900_000, 2.7)):
        assert w.submit({"ts": ts, "session": "s", "endpoint": "messages", "status": 200,
                         "realized_tokens": tokens, "realized_usd": usd})
    assert w.flush(30)
    w.close()


def _todays_figure() -> tuple[str, int]:
    from scalpel_desktop.store.ledger_queries import today_savings_or_zero

    today = today_savings_or_zero()
    assert (today.tokens, today.requests) == (12_345, 2)
    return f"{today.tokens:,} tokens (${today.usd:,.2f})", today.requests


def test_status_counts_today_from_local_midnight_via_the_ledger(capsys):
    """A fresh proxy has served nothing, yet ``status`` shows the ledger's today, like the tray."""
    from scalpel_desktop.cli import main
    from scalpel_desktop.cli.cmd_start import status_line
    from scalpel_desktop.runtime import Runtime

    _seed_today_and_yesterday()
    figure, requests = _todays_figure()
    assert figure == "12,345 tokens ($0.04)"
    rt = Runtime(port=0).start()
    try:
        assert status_line(rt.status()).endswith(f" · saved today {figure}")
        assert main(["status"]) == 0
        out = capsys.readouterr().out
        assert f"requests  0 since start ({requests} today)" in out
        assert f"saved     {figure} today (since local midnight)" in out
        assert main(["status", "--json"]) == 0
        st = json.loads(capsys.readouterr().out)
        assert (st["requests"], st["requests_today"], st["saved_tokens_today"]) == (0, 2, 12_345)
    finally:
        rt.stop()


def test_the_live_line_of_start_shows_todays_saving():
    """``scalpel start`` on a terminal (a pty) redraws its live line with the reader's figure."""
    import pty
    import select
    import time

    _seed_today_and_yesterday()
    figure, _ = _todays_figure()
    master, slave = pty.openpty()
    proc = subprocess.Popen(SCALPEL + ["start", "--port", str(free_port())], stdin=subprocess.DEVNULL,
                            stdout=slave, stderr=subprocess.PIPE, env=dict(os.environ))
    os.close(slave)
    seen = b""
    try:
        deadline = time.monotonic() + 60
        while f"saved today {figure}".encode() not in seen and time.monotonic() < deadline:
            if select.select([master], [], [], 1.0)[0]:
                try:
                    seen += os.read(master, 4096)
                except OSError:
                    break
        assert f"saved today {figure}".encode() in seen, seen[-500:]
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        os.close(master)


def test_stop_with_autopilot_on_refuses_and_names_the_command_that_does(process_service):
    """Stopping autopilot's proxy would strand Claude Code (and Restart=always would undo it)."""
    from scalpel_desktop.service import autopilot
    from scalpel_desktop.service.probe import health
    from scalpel_desktop.service.settings_file import settings_path

    port = process_service
    autopilot.on(timeout=30)
    try:
        before = settings_path().read_bytes()
        cp = scalpel("stop")
        assert cp.returncode == 1 and cp.stdout == ""
        assert "autopilot is on" in cp.stderr and "`scalpel autopilot off` restores the settings first" in cp.stderr
        assert health(port) is not None and settings_path().read_bytes() == before
    finally:
        autopilot.off()
    assert health(port) is None


def test_status_names_a_garbage_ledger_and_says_today_is_unknown(capsys):
    """Issue 25: with a garbage ledger, `status` said only "recording is OFF" and today's figures read 0."""
    from scalpel_desktop.cli import main
    from scalpel_desktop.config import Config
    from scalpel_desktop.paths import dirs
    from scalpel_desktop.runtime import Runtime

    dirs().database.parent.mkdir(parents=True, exist_ok=True)
    dirs().database.write_bytes(b"not a database, " * 512)
    rt = Runtime(Config.load(), {"anthropic_upstream": "http://127.0.0.1:9"}, port=0).start()
    try:
        assert main(["status"]) == 0
        out = capsys.readouterr().out
    finally:
        rt.stop()
    assert "file is not a database" in out and "cannot be read" in out
    assert "saved     unknown today" in out and "(unknown today)" in out and "0 tokens" not in out
    assert "recording OFF" in out and "surgery OFF" in out
    assert "fix: move the broken file aside" in out
