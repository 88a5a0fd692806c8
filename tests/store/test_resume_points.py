"""store/resume_points: what a restarted proxy reads of each conversation (issue 26 step 1)."""

from __future__ import annotations

import pytest

from scalpel_desktop.paths import dirs
from scalpel_desktop.store import db
from scalpel_desktop.store.ledger import LedgerWriter
from scalpel_desktop.store.resume_points import (
    ledger_whole,
    mark_clean_stop,
    resume_points,
    standings,
    take_clean_stop,
)


def _row(ts, session="s1", model="opus", **kw):
    base = {"ts": ts, "session": session, "endpoint": "messages", "model": model, "status": 200,
            "input_tokens": 10, "cache_write_5m": 100, "cache_write_1h": 0, "cache_read": 1000,
            "output_tokens": 5, "prefix_units": 3, "prefix_digest": f"d{ts}", "ttl_s": 300.0,
            "answered_at": ts + 2}
    base.update(kw)
    return base


def _ledger(tmp_path, rows):
    w = LedgerWriter(tmp_path / "l.sqlite3")
    for r in rows:
        assert w.submit(r)
    assert w.flush(10)
    w.close()
    return db.connect(tmp_path / "l.sqlite3")


def test_the_latest_row_of_each_conversation_and_model_is_its_point(tmp_path):
    conn = _ledger(tmp_path, [
        _row(100.0), _row(200.0, banked_usd=0.5), _row(150.0, model="haiku"),
        _row(210.0, session="s2", agent="a1"),
        _row(220.0, endpoint="count_tokens", prefix_digest=None),  # a side call is no point
        _row(5.0, session="old"),  # past the window
    ])
    got = resume_points(conn, now=1000.0, window_s=900.0)
    assert set(got) == {("s1", ""), ("s2", "a1")}
    p = got[("s1", "")]["opus"]
    assert (p.sent_at, p.answered_at, p.units, p.digest, p.ttl_s) == (200.0, 202.0, 3, "d200.0", 300.0)
    assert got[("s1", "")]["haiku"].digest == "d150.0"
    st = standings(conn, set(got))
    assert st[("s1", "")].turns == 3 and st[("s1", "")].banked_usd == 0.5
    assert st[("s1", "")].usage["opus"] == (20, 200, 0, 2000, 10)


def test_a_latest_row_without_a_digest_vouches_for_nothing(tmp_path):
    # A paused pass-through (or a failed request) after the last one the stage recorded.
    conn = _ledger(tmp_path, [_row(100.0), _row(200.0, decision="paused", prefix_digest=None, prefix_units=None,
                                                answered_at=None)])
    p = resume_points(conn, now=1000.0)[("s1", "")]["opus"]
    assert p.digest is None and p.units is None and p.sent_at == 200.0


def test_a_ledger_without_the_columns_has_no_points(tmp_path):
    import sqlite3

    conn = sqlite3.connect(tmp_path / "bare.sqlite3")
    assert resume_points(conn, 0.0) == {} and standings(conn, {("s", "")}) == {}
    conn.execute("CREATE TABLE requests (id INTEGER PRIMARY KEY, ts REAL, session TEXT)")
    assert resume_points(conn, 0.0) == {}


def test_the_clean_stop_mark_is_taken_once(isolated_home):
    assert take_clean_stop() is None
    mark_clean_stop(123.5)
    assert (dirs().state / "clean_stop.json").exists()
    assert take_clean_stop() == 123.5
    assert take_clean_stop() is None  # a proxy that crashes after this start cannot vouch for the ledger
    (dirs().state / "clean_stop.json").write_text("not json")
    assert take_clean_stop() is None and not (dirs().state / "clean_stop.json").exists()


@pytest.mark.parametrize("fields, whole", [
    ({"enabled": True, "dropped": 0, "pending": 0}, True),
    ({"enabled": True, "dropped": 1, "pending": 0}, False),
    ({"enabled": True, "dropped": 0, "pending": 2}, False),
    ({"enabled": False, "dropped": 0, "pending": 0}, False),
    ({"whole": True, "enabled": False}, True),  # a writer that says so itself (rows safe in its journal)
])
def test_whether_a_writer_wrote_every_row(fields, whole):
    class Writer:
        pass

    w = Writer()
    w.__dict__.update(fields)
    assert ledger_whole(w) is whole


def test_a_real_writer_that_wrote_everything_is_whole(tmp_path):
    w = LedgerWriter(tmp_path / "l.sqlite3")
    assert w.submit(_row(1.0)) and w.flush(10)
    w.close()
    assert ledger_whole(w)
