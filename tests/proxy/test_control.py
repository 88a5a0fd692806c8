"""The control API refuses browsers, rebound DNS names and missing or wrong tokens."""

from __future__ import annotations

import http.client
import json

import pytest

from scalpel_desktop.config import Config
from scalpel_desktop.paths import dirs
from scalpel_desktop.runtime import Runtime


@pytest.fixture
def rt():
    r = Runtime(Config.load(), {"anthropic_upstream": "http://127.0.0.1:9"}, port=0).start()
    yield r
    r.stop()


def call(port, method, path, headers=None, body=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    hdrs = {"Host": f"127.0.0.1:{port}"}
    hdrs.update(headers or {})
    conn.request(method, path, body=body, headers=hdrs)
    resp = conn.getresponse()
    data = resp.read()
    conn.close()
    return resp.status, (json.loads(data) if data else None)


def token():
    return dirs().token_file.read_text().strip()


def test_health_and_status_need_no_token(rt):
    status, body = call(rt.port, "GET", "/_scalpel/health")
    assert status == 200 and body["ok"] is True and body["port"] == rt.port
    status, body = call(rt.port, "GET", "/_scalpel/status")
    assert status == 200 and body["state"] == "running"
    for host in (f"localhost:{rt.port}", f"[::1]:{rt.port}"):
        assert call(rt.port, "GET", "/_scalpel/health", {"Host": host})[0] == 200


@pytest.mark.parametrize(
    "headers",
    [
        {},  # no token
        {"Authorization": "Bearer wrong-token"},
        {"Authorization": "Basic Zm9vOmJhcg=="},
    ],
    ids=["no-token", "wrong-token", "not-bearer"],
)
def test_control_without_the_right_token_is_403(rt, headers):
    status, body = call(rt.port, "POST", "/_scalpel/control/pause", headers, b"{}")
    assert status == 403 and "token" in body["error"]
    assert rt.setting("paused") is False


@pytest.mark.parametrize("path", ["/_scalpel/health", "/_scalpel/status", "/_scalpel/control/pause"])
def test_origin_header_is_403_even_with_the_token(rt, path):
    method = "POST" if "control" in path else "GET"
    hdrs = {"Origin": f"http://127.0.0.1:{rt.port}", "Authorization": f"Bearer {token()}"}
    status, body = call(rt.port, method, path, hdrs, b"{}" if method == "POST" else None)
    assert status == 403 and "Origin" in body["error"]
    assert rt.setting("paused") is False


@pytest.mark.parametrize("host", ["evil.example:{port}", "127.0.0.1:1", "127.0.0.1", "localhost.evil.example:{port}"])
def test_foreign_host_is_403_even_with_the_token(rt, host):
    hdrs = {"Host": host.format(port=rt.port), "Authorization": f"Bearer {token()}"}
    status, body = call(rt.port, "POST", "/_scalpel/control/pause", hdrs, b"{}")
    assert status == 403 and "Host" in body["error"]
    assert call(rt.port, "GET", "/_scalpel/status", {"Host": host.format(port=rt.port)})[0] == 403


def test_right_token_works_and_bad_bodies_are_400(rt):
    auth = {"Authorization": f"Bearer {token()}", "Content-Type": "application/json"}
    status, body = call(rt.port, "POST", "/_scalpel/control/pause", auth, b"")
    assert status == 200 and body["paused"] is True and rt.setting("paused") is True
    status, body = call(rt.port, "POST", "/_scalpel/control/settings", auth, b"[1,2]")
    assert status == 400
    status, body = call(rt.port, "POST", "/_scalpel/control/settings", auth, json.dumps({"tier": 9}).encode())
    assert status == 400 and "tier" in body["error"]


def test_reserved_prefix_is_never_forwarded(rt):
    status, body = call(rt.port, "GET", "/_scalpel/whatever")
    assert status == 404 and "unknown control path" in body["error"]
    assert rt.status()["requests"] == 0
