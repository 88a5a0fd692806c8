"""A taken port gets a clear error naming the process that holds it."""

from __future__ import annotations

import os
import socket

import pytest

from scalpel_desktop.proxy.portcheck import PortInUse, port_owner
from scalpel_desktop.proxy.server import ProxyServer, build_app
from scalpel_desktop.proxy.forward import ProxyOptions


@pytest.fixture
def listener():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    s.listen(1)
    yield s.getsockname()[1]
    s.close()


def test_port_owner_names_this_process(listener):
    owner = port_owner(listener)
    assert owner is not None
    if owner.pid is not None:  # lsof or /proc may be unreadable; then only "someone"
        assert owner.pid == os.getpid()
        assert "python" in owner.name.lower() or "pytest" in owner.name.lower()


def test_free_port_has_no_owner():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    assert port_owner(port) is None


def test_proxy_on_a_taken_port_raises_a_clear_error(listener):
    server = ProxyServer(lambda: build_app(ProxyOptions(upstream=lambda api: "http://127.0.0.1:9")), listener)
    with pytest.raises(PortInUse) as err:
        server.start()
    msg = str(err.value)
    assert f"port {listener} on 127.0.0.1 is already in use" in msg
    assert f"pid {os.getpid()}" in msg
    assert "--port" in msg
