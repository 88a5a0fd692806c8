"""runtime_health: the runtime's facts worded as degraded states, each with a code, a reason and a fix."""

from __future__ import annotations

import dataclasses
import os
import time

import pytest

from scalpel_desktop.runtime_health import MB, HealthFacts, SpillMeter, degraded_states, ledger_fix


@pytest.fixture
def fine(tmp_path) -> HealthFacts:
    """A healthy proxy's facts: nothing to say."""
    return HealthFacts(ledger_path=tmp_path / "ledger.sqlite3", spill_dir=tmp_path / "spill",
                       spill_bytes=0, spill_max_mb=8, order_waits={"timed_out": 0}, now=time.time())


def codes(facts: HealthFacts) -> list[tuple[str, str]]:
    return [(d.code, d.severity) for d in degraded_states(facts)]


def test_a_healthy_proxy_has_nothing_to_say(fine):
    assert degraded_states(fine) == []


def test_a_database_that_could_not_be_used_names_every_feature_it_took_down(fine):
    error = "DatabaseError: file is not a database"
    down = dataclasses.replace(fine, recording=False, recording_error=error, features_error=error,
                               surgery_running=False, tool_filter_running=False, today_error=error)
    assert codes(down) == [("ledger-unreadable", "fail"), ("recording-off", "fail"), ("surgery-off", "fail")]
    asked = dataclasses.replace(down, tool_filter_asked=True)  # off by default: only said when asked on
    items = degraded_states(asked)
    assert [d.code for d in items][-1] == "tool-filter-off"
    for d in items:
        assert error in d.reason and d.fix and d.label
        assert "mv " in d.fix and str(fine.ledger_path) in d.fix  # a garbage file: move it aside


def test_choices_are_said_as_info_not_failures(fine):
    assert codes(dataclasses.replace(fine, paused=True)) == [("surgery-off", "info")]
    off = degraded_states(dataclasses.replace(fine, policy="off"))
    assert [(d.code, d.severity, d.label) for d in off] == [("surgery-off", "info", "policy off")]
    assert "scalpel policy" in off[0].fix


def test_a_lock_is_said_while_the_writer_retries_with_what_waits(fine):
    locked = dataclasses.replace(fine, ledger_busy_since=fine.now - 12, ledger_pending=3)
    (item,) = degraded_states(locked)
    assert (item.code, item.severity) == ("ledger-locked", "fail")
    assert "12 s" in item.reason and "3 row(s)" in item.reason and "close the program" in item.fix
    read_locked = dataclasses.replace(fine, today_error="OperationalError: database is locked")
    assert codes(read_locked) == [("ledger-locked", "fail")]


def test_spill_failures_and_the_cap(fine):
    full = degraded_states(dataclasses.replace(
        fine, spill_problem="cannot write spill file x: [Errno 28] No space left on device"))
    assert [(d.code, d.label) for d in full] == [("spill-failing", "disk full")]
    other = degraded_states(dataclasses.replace(fine, spill_problem="cannot write spill file x: [Errno 30] Read-only"))
    assert [(d.code, d.label) for d in other] == [("spill-failing", "spill failing")]
    at_cap = dataclasses.replace(fine, spill_bytes=fine.spill_max_mb * MB)
    assert degraded_states(at_cap) == []  # the cap itself is allowed
    over = dataclasses.replace(fine, spill_bytes=fine.spill_max_mb * MB + 1)
    (item,) = degraded_states(over)
    assert (item.code, item.severity) == ("spill-over-cap", "warn") and "scalpel spill gc" in item.fix


def test_order_waits_past_the_bound_are_a_warning_with_the_count(fine):
    waits = dataclasses.replace(fine, order_waits={"waited": 9, "timed_out": 2, "last_timeout_at": fine.now},
                                order_wait_s=10.0)
    (item,) = degraded_states(waits)
    assert (item.code, item.severity) == ("order-waits", "warn") and "2 request(s)" in item.reason
    assert "10 s" in item.reason


def test_the_most_serious_come_first(fine):
    mixed = dataclasses.replace(fine, paused=True, order_waits={"timed_out": 1}, recording=False)
    assert [s for _, s in codes(mixed)] == ["fail", "warn", "info"]


def test_the_fix_follows_what_is_really_there(tmp_path):
    folder = tmp_path / "ledger.sqlite3"
    folder.mkdir()  # what a test run as root can use where chmod a-w would not stop a write
    assert "is a folder" in ledger_fix("OperationalError: unable to open database file", folder)
    afile = tmp_path / "other.sqlite3"
    assert "chmod u+w" in ledger_fix("OperationalError: attempt to write a readonly database", afile)
    assert "free disk space" in ledger_fix("OperationalError: database or disk is full", afile)


def test_the_spill_meter_sums_files_and_walks_at_most_once_per_ttl(tmp_path):
    spill = tmp_path / "spill"
    assert SpillMeter(spill).bytes() == 0  # no spill dir yet
    (spill / "ab").mkdir(parents=True)
    (spill / "ab" / "one").write_bytes(b"x" * 1000)
    meter = SpillMeter(spill, ttl_s=3600)
    assert meter.bytes() == 1000
    (spill / "ab" / "two").write_bytes(b"y" * 24)
    assert meter.bytes() == 1000  # within the ttl: not walked again
    assert SpillMeter(spill, ttl_s=0).bytes() == 1024
    os.remove(spill / "ab" / "one")
    assert SpillMeter(spill, ttl_s=0).bytes() == 24
