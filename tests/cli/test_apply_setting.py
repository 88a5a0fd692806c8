"""cli/apply_setting.py: a setting goes through the running proxy when one runs, else into the file."""

from __future__ import annotations

import http.server
import json
import os
import threading

import pytest

from scalpel_desktop.errors import CliError
from scalpel_desktop.cli.apply_setting import apply_setting
from scalpel_desktop.paths import dirs


class FakeConfig:
    def __init__(self, path, fail=False):
        self.path, self.fail, self.saves = path, fail, 0

    def save(self):
        if self.fail:
            raise PermissionError(13, "Permission denied")
        self.saves += 1


class Control(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.server.seen.append((self.path, json.loads(body)))
        self.send_response(self.server.status)
        self.end_headers()
        self.wfile.write(b'{"ok": true}' if self.server.status == 200 else b'{"error": "tier must be 5m or 1h"}')

    def log_message(self, *args):
        pass


@pytest.fixture
def proxy():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Control)
    srv.seen, srv.status = [], 200
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    d = dirs()
    d.runtime_file.parent.mkdir(parents=True, exist_ok=True)
    d.runtime_file.write_text(json.dumps({"pid": os.getpid(), "port": srv.server_address[1]}))
    d.token_file.parent.mkdir(parents=True, exist_ok=True)
    d.token_file.write_text("tok")
    yield srv
    srv.shutdown()
    srv.server_close()


def test_without_a_proxy_the_file_is_saved(tmp_path):
    cfg = FakeConfig(tmp_path / "config.json")
    where, live = apply_setting("tier", "1h", cfg)
    assert (where, live, cfg.saves) == (f"saved to {cfg.path}; no proxy running", False, 1)


def test_an_unwritable_file_is_a_cli_error_naming_it(tmp_path):
    cfg = FakeConfig(tmp_path / "config.json", fail=True)
    with pytest.raises(CliError, match=f"cannot write {cfg.path}: .*Permission denied"):
        apply_setting("tier", "1h", cfg)


def test_a_running_proxy_applies_it_live_and_the_file_is_left_to_it(proxy, tmp_path):
    cfg = FakeConfig(tmp_path / "config.json")
    where, live = apply_setting("tier", "1h", cfg)
    port = proxy.server_address[1]
    assert (where, live) == (f"applied live by the running proxy on port {port} and saved", True)
    assert proxy.seen == [("/_scalpel/control/settings", {"tier": "1h"})]
    assert cfg.saves == 0  # the proxy owns the file while it runs


def test_a_refusal_by_the_proxy_is_a_cli_error_and_nothing_is_saved(proxy, tmp_path):
    proxy.status = 400
    cfg = FakeConfig(tmp_path / "config.json")
    with pytest.raises(CliError, match="the running proxy refused tier='2h': .*tier must be 5m or 1h"):
        apply_setting("tier", "2h", cfg)
    assert cfg.saves == 0


def test_a_stale_runtime_file_falls_back_to_the_file(tmp_path):
    dirs().runtime_file.parent.mkdir(parents=True, exist_ok=True)
    dirs().runtime_file.write_text(json.dumps({"pid": 0, "port": "nope"}))
    cfg = FakeConfig(tmp_path / "config.json")
    assert apply_setting("tier", "1h", cfg)[1] is False and cfg.saves == 1
