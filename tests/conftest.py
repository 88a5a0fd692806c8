"""Every test runs with its own HOME, CLAUDE_CONFIG_DIR, XDG dirs and SCALPEL_HOME.

No test may read or write the real ~/.claude, ~/.claude.json, ~/.config or a
real service manager: the autouse fixture below points all of them at a
temporary folder before the test body (and any subprocess it starts) runs.
"""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("PYSTRAY_BACKEND", "dummy")
os.environ.pop("NO_COLOR", None)


@pytest.fixture(autouse=True)
def isolated_home(tmp_path_factory, monkeypatch):
    root = tmp_path_factory.mktemp("home")
    home = root / "home"
    home.mkdir()
    env = {
        "HOME": home,
        "SCALPEL_HOME": root / "scalpel",
        "CLAUDE_CONFIG_DIR": home / ".claude",
        "XDG_CONFIG_HOME": home / ".config",
        "XDG_DATA_HOME": home / ".local" / "share",
        "XDG_STATE_HOME": home / ".local" / "state",
        "XDG_CACHE_HOME": home / ".cache",
        "XDG_RUNTIME_DIR": root / "run",
    }
    (root / "run").mkdir()
    for k, v in env.items():
        monkeypatch.setenv(k, str(v))
    for k in ("ANTHROPIC_BASE_URL", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "OPENAI_API_KEY",
              "SCALPEL_ANTHROPIC_UPSTREAM", "SCALPEL_OPENAI_UPSTREAM", "SCALPEL_TEST_CLOCK_FILE"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("PYSTRAY_BACKEND", "dummy")
    return home


@pytest.fixture(autouse=True)
def generous_write_budget(monkeypatch):
    """The shipped ``write_wait_ms`` (50 ms) bounds how long a request waits for a spill or the
    database; on this shared, busy test machine an fsync alone can take longer, and a cut would
    then be skipped (fail open) in tests that are about what the cuts do. So tests run with a
    generous default; the bound itself is tested where a test sets it (tests/surgery/test_stall.py,
    tests/tools/test_pins.py, tests/pipeline/test_locked_ledger.py)."""
    import dataclasses

    from scalpel_desktop import config

    key = config.KEYS["write_wait_ms"]
    monkeypatch.setitem(config.KEYS, "write_wait_ms", dataclasses.replace(key, default=3000))

