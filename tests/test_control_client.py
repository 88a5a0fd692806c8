"""control_client.py: discovering the running proxy and calling its control API (stdlib only)."""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import threading
import time

import pytest

from scalpel_desktop.control_client import (
    ControlClient,
    ControlError,
    ProxyNotRunning,
    pid_alive,
    runtime_info,
)
from scalpel_desktop.paths import dirs
from tests.support import free_port


class Control(http.server.BaseHTTPRequestHandler):
    def _answer(self):
        length = int(self.headers.get("Content-Length") or 0)
        self.server.seen.append((self.command, self.path, self.headers.get("Authorization"),
                                 self.rfile.read(length) if length else b""))
        status, body = self.server.answers.get(self.path, (404, b'{"error": "no such thing"}'))
        self.send_response(status)
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _answer

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Control)
    srv.seen, srv.answers = [], {}
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def write_runtime(info):
    dirs().runtime_file.parent.mkdir(parents=True, exist_ok=True)
    dirs().runtime_file.write_text(json.dumps(info) if not isinstance(info, str) else info)


def test_discover_reads_the_runtime_file_and_the_token():
    write_runtime({"pid": os.getpid(), "port": 8899})
    dirs().token_file.parent.mkdir(parents=True, exist_ok=True)
    dirs().token_file.write_text("tok\n")
    c = ControlClient.discover()
    assert (c.port, c.token, c.pid, c.base_url) == (8899, "tok", os.getpid(), "http://127.0.0.1:8899")
    assert runtime_info() == {"pid": os.getpid(), "port": 8899}


@pytest.mark.parametrize("info, message", [
    (None, "scalpel is not running (no "),
    ("{not json", "scalpel is not running (no "),
    ({"pid": 1}, "is unreadable"),
    ({"port": "x"}, "is unreadable"),
])
def test_discover_says_what_to_do_when_there_is_no_proxy(info, message):
    if info is not None:
        write_runtime(info)
    with pytest.raises(ProxyNotRunning, match=message.replace("(", r"\(")):
        ControlClient.discover()


def test_discover_notices_a_dead_pid():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    write_runtime({"pid": child.pid, "port": 1})
    with pytest.raises(ProxyNotRunning, match=rf"pid {child.pid} from .* is gone\); start it with `scalpel start`"):
        ControlClient.discover()


def test_pid_alive():
    assert pid_alive(os.getpid())
    assert not pid_alive(0) and not pid_alive(-5)
    zombie = subprocess.Popen([sys.executable, "-c", "pass"])
    while True:  # exited but not reaped: a zombie is not alive
        try:
            with open(f"/proc/{zombie.pid}/stat", "rb") as f:
                if f.read().rsplit(b")", 1)[1].split()[0] == b"Z":
                    break
        except OSError:
            break
        time.sleep(0.01)
    assert not pid_alive(zombie.pid)
    zombie.wait()


def test_actions_post_json_with_the_bearer_token(server):
    server.answers["/_scalpel/control/settings"] = (200, b'{"ok": true, "applied": {"tier": "1h"}}')
    c = ControlClient(server.server_address[1], token="sekrit")
    assert c.set_settings({"tier": "1h"}) == {"ok": True, "applied": {"tier": "1h"}}
    method, path, auth, body = server.seen[-1]
    assert (method, path, auth, json.loads(body)) == ("POST", "/_scalpel/control/settings", "Bearer sekrit",
                                                      {"tier": "1h"})


def test_reads_need_no_token_and_non_objects_are_wrapped(server):
    server.answers["/_scalpel/health"] = (200, b"[1, 2]")
    server.answers["/_scalpel/status"] = (200, b"")
    c = ControlClient(server.server_address[1])
    assert c.health() == {"result": [1, 2]} and c.status() == {}
    assert server.seen[0][2] is None


def test_errors_carry_the_status_and_the_proxys_message(server):
    server.answers["/_scalpel/control/pause"] = (409, b'{"error": "already paused"}')
    server.answers["/_scalpel/control/stop"] = (500, b"plain failure")
    server.answers["/_scalpel/status"] = (200, b"<html>")
    c = ControlClient(server.server_address[1], token="t")
    with pytest.raises(ControlError, match="/_scalpel/control/pause: HTTP 409: already paused") as e:
        c.pause()
    assert e.value.status == 409
    with pytest.raises(ControlError, match="HTTP 500: plain failure"):
        c.stop()
    with pytest.raises(ControlError, match="the answer is not JSON"):
        c.status()


def test_a_missing_token_is_refused_before_any_request(server):
    with pytest.raises(ControlError, match="no control token in .*; restart scalpel"):
        ControlClient(server.server_address[1]).resume()
    assert server.seen == []


def test_nothing_listening_is_proxy_not_running(monkeypatch):
    monkeypatch.setenv("http_proxy", "http://127.0.0.1:9")  # never used for loopback control calls
    port = free_port()
    with pytest.raises(ProxyNotRunning, match=f"not answering on 127.0.0.1:{port}"):
        ControlClient(port, timeout=2).health()
