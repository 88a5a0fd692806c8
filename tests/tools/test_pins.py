"""tools/pins.py: a session's removal set is fixed at its first request, and storing it never
makes a request wait on a locked database (the pin stored later is the one sent)."""

from __future__ import annotations

import pytest

from scalpel_desktop.tools.pins import SessionPins
from scalpel_desktop.tools.store import ToolStore
from tests.support.db_lock import exclusive_lock


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


def _store(tmp_path) -> ToolStore:
    store = ToolStore.open(tmp_path / "ledger.sqlite3")
    store.add_removal("ReportFindings", "cli", forced=True)
    return store


def test_a_pin_is_read_and_stored_within_the_bound(tmp_path):
    store = _store(tmp_path)
    pins = SessionPins(store, lambda: True, wait_s=lambda: 5.0)
    pin = pins.pin_for("s1")
    assert pin is not None and pin.enabled and pin.names == {"ReportFindings"}
    assert store.get_pin("s1") == pin


def test_under_an_exclusive_lock_the_request_goes_unfiltered_and_the_pin_lands_empty_later(tmp_path):
    store = _store(tmp_path)
    pins = SessionPins(store, lambda: True, wait_s=lambda: 0.05)
    with exclusive_lock(tmp_path / "ledger.sqlite3"):
        assert pins.pin_for("s2") is None  # not stored in time: this request is sent unfiltered
        assert pins.pin_for("s2") is None  # nor the next one: the session keeps its tools
    assert pins.worker.flush(30)
    stored = store.get_pin("s2")
    assert stored is not None and not stored.enabled and stored.names == frozenset()
    assert pins.pin_for("s2") == stored  # what later requests use is what the database holds


def test_a_database_error_that_is_not_a_stall_fails_the_stage_open(tmp_path):
    store = _store(tmp_path)
    pins = SessionPins(store, lambda: True, wait_s=lambda: 5.0)
    store.close()
    try:
        pins.pin_for("s3")
    except Exception as e:  # noqa: BLE001 - the chain turns it into an "error" decision
        assert "closed" in str(e)
    else:
        raise AssertionError("a closed database must not answer a pin")


def test_a_pin_that_would_be_empty_is_answered_without_the_database(tmp_path):
    """Filter off, or a session first seen mid-conversation, and no non-empty pin stored for it: the
    answer is empty whatever the database says, so the request does not wait for it (it is locked
    here); the worker stores the empty pin once it can."""
    store = _store(tmp_path)
    SessionPins(store, lambda: True, wait_s=lambda: 5.0).pin_for("pinned")  # a stored non-empty pin
    pins = SessionPins(store, lambda: False, wait_s=lambda: 0.05)
    assert pins.worker.flush(30)  # the set of non-empty pins has been read
    with exclusive_lock(tmp_path / "ledger.sqlite3"):
        pin = pins.pin_for("new")
        assert pin is not None and pin.names == frozenset() and not pin.enabled
        assert pins.pin_for("new") == pin  # cached
        assert pins.pin_for("pinned") is None  # its stored pin removes tools: only the database knows
    assert pins.worker.flush(30)
    stored = store.get_pin("new")
    assert stored is not None and stored.names == frozenset()
    assert pins.pin_for("pinned").names == {"ReportFindings"}


def test_mid_session_with_the_filter_on_is_answered_at_once_too(tmp_path):
    store = _store(tmp_path)
    pins = SessionPins(store, lambda: True, wait_s=lambda: 0.05)
    assert pins.worker.flush(30)
    with exclusive_lock(tmp_path / "ledger.sqlite3"):
        assert pins.pin_for("resumed", mid_session=True).names == frozenset()
        assert pins.pin_for("fresh") is None  # a new session with the filter on: its pin is the list, stored first
    assert pins.worker.flush(30)
    assert store.get_pin("resumed").names == frozenset() and store.get_pin("fresh").names == frozenset()


def test_empty_at_once_answers_only_what_needs_no_database(tmp_path):
    """A first sighting that goes out before the filter looks (pipeline/lane.py) asks whether its
    session's pin is surely empty: yes with the filter off (and that empty pin is the one stored),
    no with it on, and no for a session whose stored pin removes tools - all without waiting on the
    database (locked here)."""
    store = _store(tmp_path)
    SessionPins(store, lambda: True, wait_s=lambda: 5.0).pin_for("pinned")  # a stored non-empty pin
    off = SessionPins(store, lambda: False, wait_s=lambda: 0.05)
    on = SessionPins(store, lambda: True, wait_s=lambda: 0.05)
    assert off.worker.flush(30) and on.worker.flush(30)
    with exclusive_lock(tmp_path / "ledger.sqlite3"):
        assert off.empty_at_once("new", now=5.0)
        assert off.pin_for("new").names == frozenset()  # the same answer the request path would get
        assert not off.empty_at_once("pinned")
        assert not on.empty_at_once("fresh")  # a new session's pin with the filter on: only the body says
        assert on.pin_for("fresh") is None  # it waits on the database, as it would without the question
    assert off.worker.flush(30) and on.worker.flush(30)
    assert store.get_pin("new").names == frozenset()
    assert store.get_pin("fresh").names == frozenset()  # the unfiltered request above pinned it empty
