"""Dashboard tests: a fixed time zone, the data dir under HOME (stable paths on screen), a seeded ledger."""

from __future__ import annotations

import time

import pytest

from tests.tui.seed import NOW, Seed, seed_ledger


@pytest.fixture(autouse=True)
def stable_screen(monkeypatch, isolated_home):
    """UTC, and SCALPEL_HOME inside HOME so spill paths show as ~/.local/share/scalpel/..."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    monkeypatch.setenv("SCALPEL_HOME", str(isolated_home / ".local" / "share" / "scalpel"))
    monkeypatch.delenv("NO_COLOR", raising=False)
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.fixture
def seeded() -> Seed:
    return seed_ledger(NOW)


def frozen() -> float:
    return NOW


@pytest.fixture
def anyio_backend():
    """Async tests (``pytest.mark.anyio``) run on asyncio, as Textual does."""
    return "asyncio"
