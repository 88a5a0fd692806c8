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
