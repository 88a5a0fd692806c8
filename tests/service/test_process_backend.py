"""The test service backend behaves like autopilot's login units: the proxy comes back after any exit."""

from __future__ import annotations

import json
import time

from scalpel_desktop.control_client import ControlClient, pid_alive
from scalpel_desktop.service import autopilot
from scalpel_desktop.service.probe import health, wait_healthy
from scalpel_desktop.service.process_backend import ProcessBackend


def _back_with_a_new_pid(port: int, old_pid: int) -> dict:
    """Health from a proxy that is not ``old_pid`` (the supervisor restarted it)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        doc = health(port, timeout=0.5)
        if doc is not None and doc.get("pid") != old_pid:
            return doc
        time.sleep(0.1)
    raise AssertionError("the proxy did not come back")


def test_a_killed_proxy_comes_back(process_service):
    port = process_service
    autopilot.on(timeout=30)
    backend = ProcessBackend()
    first = backend.kill_proxy()
    assert first is not None
    doc = _back_with_a_new_pid(port, first)
    assert doc["pid"] == backend.pid() != first and backend.starts() == 2
    # killed by a signal is only restarting (a hook waiting on it must not give up), unlike exit status 1
    assert json.loads(backend.marker.read_text())["last_exit"] == -9 and backend.still_starting()
    autopilot.off()
    assert health(port) is None and backend.pid() is None


def test_a_clean_exit_is_restarted_too(process_service):
    """Restart=always, not on-failure: a proxy told to stop through its control API comes back."""
    port = process_service
    autopilot.on(timeout=30)
    backend = ProcessBackend()
    first = backend.pid()
    ControlClient.discover().stop()
    doc = _back_with_a_new_pid(port, first)
    assert not pid_alive(first) and doc["pid"] == backend.pid()
    autopilot.off()


def test_stop_leaves_it_installed_but_not_running(process_service):
    port = process_service
    autopilot.on(timeout=30)
    backend = ProcessBackend()
    backend.stop()
    assert backend.enabled() and backend.pid() is None and backend.supervisor_pid() is None
    assert health(port) is None
    assert backend.start().ok and wait_healthy(port, 30) is not None
    autopilot.off()


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
