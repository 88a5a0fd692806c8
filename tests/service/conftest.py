"""Service tests: the TEST service backend (a real `scalpel start` child) on a free port."""

from __future__ import annotations

import json

import pytest

from tests.support import free_port


@pytest.fixture
def process_service(isolated_home, monkeypatch):
    """Autopilot with the process backend on a free port; stops anything it started."""
    from scalpel_desktop.paths import dirs

    port = free_port()
    monkeypatch.setenv("SCALPEL_TEST_SERVICE_BACKEND", "process")
    dirs().config.mkdir(parents=True, exist_ok=True)
    dirs().config_file.write_text(json.dumps({"port": port}))
    yield port
    from scalpel_desktop.service.process_backend import ProcessBackend

    ProcessBackend().disable()
    assert ProcessBackend().pid() is None


@pytest.fixture
def project(isolated_home):
    """The captured hook inputs' project, with the file they read."""
    from tests.service.hook_inputs import NOTES

    root = isolated_home / "project"
    root.mkdir()
    (root / "notes.txt").write_text(NOTES)
    return root


@pytest.fixture
def ledger(isolated_home):
    """A real ledger (all migrations) with the surgery log table."""
    from scalpel_desktop.store.db import connect

    conn = connect()
    yield conn
    conn.close()
