"""The journal beside the ledger: append-only, one row a line, private, bounded, replayed from a taken file."""

from __future__ import annotations

import json
import os
import stat
import threading

from scalpel_desktop.store.row_journal import RowJournal, journal_path


def rows(n: int, start: int = 0) -> list[dict]:
    return [{"uid": f"u{i:04d}", "ts": 1000.0 + i, "session": "s", "status": 200, "body_bytes": i}
            for i in range(start, start + n)]


def taken(j: RowJournal) -> list[dict]:
    return [r for batch in j.take(batch=3) for r in batch]


def test_the_journal_sits_beside_the_ledger(tmp_path):
    assert journal_path(tmp_path / "ledger.sqlite3") == tmp_path / "ledger.sqlite3-rows.jsonl"


def test_rows_are_appended_one_a_line_private_and_read_back_whole(tmp_path):
    j = RowJournal(tmp_path / "l-rows.jsonl")
    assert j.append(rows(4)) and j.append(rows(3, start=4)) and j.append([])
    assert j.rows == 7
    lines = j.path.read_bytes().splitlines()
    assert [json.loads(x) for x in lines] == rows(7)  # exactly the rows given: nothing added
    assert stat.S_IMODE(os.stat(j.path).st_mode) == 0o600
    assert RowJournal(j.path).rows == 7  # counted again by a new process
    assert taken(j) == rows(7)
    j.done()
    assert j.rows == 0 and not j.path.exists() and not j.taken_path.exists()


def test_a_torn_last_line_is_skipped_and_the_next_append_starts_a_fresh_line(tmp_path):
    """A crash mid-append leaves half a line; it must not swallow the next record."""
    j = RowJournal(tmp_path / "l-rows.jsonl")
    assert j.append(rows(2))
    with open(j.path, "ab") as f:
        f.write(b'{"uid":"torn","ts":10')  # no newline: the process died here
    assert j.append(rows(2, start=2))
    got = taken(j)
    assert [r["uid"] for r in got] == ["u0000", "u0001", "u0002", "u0003"] and j.torn == 1


def test_appends_during_a_replay_go_to_a_new_journal_and_a_taken_file_left_by_a_crash_comes_back(tmp_path):
    j = RowJournal(tmp_path / "l-rows.jsonl")
    assert j.append(rows(3))
    batches = j.take(batch=2)
    first = next(batches)  # the journal is now the taken file
    assert j.taken_path.exists() and not j.path.exists()
    assert j.append(rows(2, start=10))  # e.g. the stop journals while the writer replays
    assert j.path.exists()
    del batches  # the process "dies" before done(): the taken file stays
    again = RowJournal(j.path)
    assert again.rows == 5
    assert taken(again)[: len(first)] == first and len(taken(again)) == 3  # the taken file first, whole
    again.done()
    assert again.rows == 2 and [r["uid"] for r in taken(again)] == ["u0010", "u0011"]


def test_a_full_journal_keeps_nothing_and_says_why(tmp_path):
    j = RowJournal(tmp_path / "l-rows.jsonl", max_bytes=300)
    assert j.append(rows(2))
    size = j.path.stat().st_size
    assert not j.append(rows(5, start=2))
    assert j.path.stat().st_size == size and j.rows == 2 and "full" in j.last_error
    assert j.append(rows(1, start=9)) and j.last_error is None


def test_a_journal_that_cannot_be_written_says_false(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    j = RowJournal(blocker / "l-rows.jsonl")  # its folder is a file
    assert not j.append(rows(1)) and "NotADirectoryError" in j.last_error and j.rows == 0


def test_appends_from_two_threads_never_interleave(tmp_path):
    j = RowJournal(tmp_path / "l-rows.jsonl")
    big = [{"uid": f"t{t}-{i}", "label": "x" * 3000} for t in range(2) for i in range(200)]

    def write(t: int) -> None:
        for i in range(0, 200, 10):
            assert j.append(big[t * 200 + i: t * 200 + i + 10])

    threads = [threading.Thread(target=write, args=(t,)) for t in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    got = taken(j)
    assert j.torn == 0 and sorted(r["uid"] for r in got) == sorted(r["uid"] for r in big)
