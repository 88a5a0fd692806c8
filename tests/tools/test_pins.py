"""tools/pins.py: a session's removal set is fixed at its first request."""

from __future__ import annotations

import pytest

from scalpel_desktop.tools.pins import SessionPins
from scalpel_desktop.tools.store import ToolStore


@pytest.fixture
def store(tmp_path):
    s = ToolStore.open(tmp_path / "ledger.sqlite3")
    yield s
    s.close()


def test_first_request_pins_the_list_and_later_changes_do_not_move_it(store):
    store.add_removal("Workflow", "cli", forced=True)
    pins = SessionPins(store, enabled=lambda: True)
    pin = pins.pin_for("s1", now=1.0)
    assert pin.enabled and pin.names == frozenset({"Workflow"})
    store.add_removal("mcp__gh", "cli", forced=False)
    assert pins.pin_for("s1").names == frozenset({"Workflow"})
    assert pins.pin_for("s2").names == frozenset({"Workflow", "mcp__gh"})


def test_the_pin_survives_a_restart_and_a_config_change(store):
    store.add_removal("Workflow", "cli", forced=True)
    SessionPins(store, enabled=lambda: True).pin_for("s1")
    later = SessionPins(store, enabled=lambda: False)
    assert later.pin_for("s1").names == frozenset({"Workflow"})


def test_filter_off_mid_session_or_a_broken_setting_pins_empty(store):
    store.add_removal("Workflow", "cli", forced=True)
    assert SessionPins(store, enabled=lambda: False).pin_for("off").names == frozenset()
    assert SessionPins(store, enabled=lambda: True).pin_for("mid", mid_session=True).names == frozenset()

    def broken():
        raise RuntimeError("config unreadable")

    pin = SessionPins(store, enabled=broken).pin_for("broken")
    assert not pin.enabled and pin.names == frozenset()


def test_forget_drops_the_cached_copy_so_a_repin_is_seen(store):
    pins = SessionPins(store, enabled=lambda: True)
    assert pins.pin_for("s1").names == frozenset()
    store.repin(["s1"], ["X"], "cli")
    assert pins.pin_for("s1").names == frozenset()  # cached
    pins.forget()
    assert pins.pin_for("s1").names == frozenset({"X"})
