"""service/process_backend.py: the TEST backend, a real ``scalpel start`` child standing in for a service."""

from __future__ import annotations

import json
import os

from scalpel_desktop.paths import dirs
from scalpel_desktop.service import probe
from scalpel_desktop.service.process_backend import ProcessBackend
from tests.support import free_port


def test_start_runs_a_real_proxy_and_disable_stops_exactly_it(isolated_home):
    port = free_port()
    dirs().config.mkdir(parents=True, exist_ok=True)
    dirs().config_file.write_text(json.dumps({"port": port}))
    b = ProcessBackend()
    assert not b.enabled() and b.pid() is None
    try:
        assert b.enable().ok and b.enabled()
        pid = b.pid()
        assert pid is not None and pid != os.getpid()
        assert probe.wait_healthy(port, timeout=60, still_starting=lambda: b.pid() is not None) is not None
        assert b.start().ok and b.pid() == pid  # already running: no second child
        recorded = json.loads(b.marker.read_text())
        assert recorded["argv"][-1] == "start"
    finally:
        out = b.disable()
    assert out.result.name == "DISABLED"
    assert b.pid() is None and not b.marker.exists()
    assert probe.health(port, timeout=0.5) is None


def test_disable_without_a_marker_is_not_installed(isolated_home):
    assert ProcessBackend().disable().result.name == "NOT_INSTALLED"


def test_a_damaged_or_dead_marker_means_no_pid(isolated_home):
    b = ProcessBackend()
    b.marker.parent.mkdir(parents=True, exist_ok=True)
    b.marker.write_text("{oops")
    assert b.enabled() and b.pid() is None
    b.marker.write_text(json.dumps({"pid": "12"}))
    assert b.pid() is None
    b.marker.write_text(json.dumps({"pid": 0}))
    assert b.pid() is None
