"""``scalpel emulator``: help, a clear error on a taken port, and a real foreground run."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import urllib.request

import pytest

from scalpel_desktop.cli import main
from tests.support import free_port


def test_help(capsys):
    with pytest.raises(SystemExit) as e:
        main(["emulator", "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert "--port" in out and "--script" in out and "/_emulator/" in out


def test_unknown_script_and_taken_port(capsys):
    assert main(["emulator", "--script", "nope"]) == 1
    assert "unknown script" in capsys.readouterr().err
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        assert main(["emulator", "--port", str(port)]) == 1
    assert f"cannot listen on 127.0.0.1:{port}" in capsys.readouterr().err


def test_foreground_run_answers_requests():
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "scalpel_desktop", "emulator", "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ))
    try:
        line = proc.stdout.readline()
        assert f"http://127.0.0.1:{port}" in line
        req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/messages", method="POST",
                                     data=json.dumps({"model": "m", "max_tokens": 5, "messages": [
                                         {"role": "user", "content": "hi"}]}).encode(),
                                     headers={"x-api-key": "k", "content-type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as resp:
            assert json.loads(resp.read())["type"] == "message"
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/_emulator/requests", timeout=10) as resp:
            assert len(json.loads(resp.read())["requests"]) == 1
        proc.terminate()  # SIGTERM: a clean stop, the port freed
        assert proc.wait(10) == 0, proc.stderr.read()
        with socket.socket() as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # TIME_WAIT from the request above
            s.bind(("127.0.0.1", port))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
