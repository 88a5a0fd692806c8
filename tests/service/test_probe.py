"""service/probe.py: is a scalpel proxy answering on a port (stdlib only)."""

from __future__ import annotations

import http.server
import json
import threading

import pytest

from scalpel_desktop.service import probe
from tests.support import free_port


class Answer(http.server.BaseHTTPRequestHandler):
    status = 200
    body = b'{"ok": true, "version": "x"}'

    def do_GET(self):
        self.server.paths.append(self.path)
        self.send_response(self.server.status)
        self.end_headers()
        self.wfile.write(self.server.body)

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Answer)
    srv.status, srv.body, srv.paths = 200, b'{"ok": true, "version": "x"}', []
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def test_health_returns_the_document_of_a_healthy_proxy(server):
    port = server.server_address[1]
    assert probe.health(port) == {"ok": True, "version": "x"}
    assert server.paths == ["/_scalpel/health"]


@pytest.mark.parametrize("status, body", [
    (503, b'{"ok": true}'), (200, b'{"ok": false}'), (200, b"not json"), (200, b"[1]"),
])
def test_health_is_none_for_anything_but_an_ok_answer(server, status, body):
    server.status, server.body = status, body
    assert probe.health(server.server_address[1]) is None


def test_nothing_listening_is_none_and_wait_healthy_gives_up_when_told():
    port = free_port()
    assert probe.health(port, timeout=0.5) is None
    assert probe.wait_healthy(port, timeout=60, still_starting=lambda: False) is None


def test_wait_healthy_returns_as_soon_as_it_answers(server):
    assert probe.wait_healthy(server.server_address[1], timeout=10) == json.loads(server.body)


def test_is_scalpel_url(server):
    port = server.server_address[1]
    assert probe.base_url(8787) == "http://127.0.0.1:8787"
    assert probe.is_scalpel_url("http://127.0.0.1:8787/v1", 8787)
    assert probe.is_scalpel_url("http://localhost:8787", 8787)
    assert not probe.is_scalpel_url("http://127.0.0.1:8788", 8787)
    assert not probe.is_scalpel_url("https://api.anthropic.com", 8787)
    assert not probe.is_scalpel_url(None, 8787)
    assert not probe.is_scalpel_url("http://[bad", 8787)
    assert probe.is_scalpel_url(f"http://127.0.0.1:{port}")  # any port: it answers like scalpel
    assert not probe.is_scalpel_url(f"http://127.0.0.1:{free_port()}")
    assert not probe.is_scalpel_url("http://127.0.0.1")
