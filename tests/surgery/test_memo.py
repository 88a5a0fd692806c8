"""The memo of previous requests is bounded by what it holds (estimated bytes) as well as by count."""

from __future__ import annotations

from scalpel_desktop.surgery.memo import Memo, Snapshot
from scalpel_desktop.wire.held import doc_bytes, layout_bytes, view_bytes
from scalpel_desktop.wire.layout import Layout


def _snap(n: int, sent: int | None = None) -> Snapshot:
    raw = b"r" * n
    return Snapshot(raw, Layout([n - 1], [n - 2], [b"h"]), None if sent is None else b"s" * sent, [0], [b"h"])


def test_the_byte_budget_evicts_least_recently_used_first():
    each = _snap(2_000, sent=1_000).nbytes()  # 3,000 body bytes and their layout
    memo = Memo(size=100, max_bytes=3 * each + 10)
    for k in range(5):
        memo.put(k, _snap(2_000, sent=1_000))  # three fit
    assert memo.nbytes <= memo.max_bytes
    assert [k for k in range(5) if memo.get(k) is not None] == [2, 3, 4]
    assert memo.nbytes == 3 * each
    memo.get(2)  # 2 is now the most recently used: 3 goes next
    memo.put(5, _snap(2_000))
    assert memo.get(3) is None and memo.get(2) is not None and memo.get(5) is not None
    assert memo.nbytes == sum(s.nbytes() for s in memo._items.values()) <= memo.max_bytes


def test_replacing_and_dropping_keep_the_count_exact_and_oversized_is_not_kept():
    memo = Memo(size=8, max_bytes=10_000)
    memo.put("a", _snap(4_000))
    memo.put("a", _snap(5_000))  # replaces: counted once
    assert memo.nbytes == _snap(5_000).nbytes() and len(memo) == 1
    memo.put("b", _snap(20_000))  # larger than the whole budget: not kept, nothing else lost
    assert memo.get("b") is None and memo.get("a") is not None and memo.nbytes == _snap(5_000).nbytes()
    memo.drop("a")
    assert memo.nbytes == 0 and len(memo) == 0


def test_a_sent_body_that_is_the_received_one_counts_once():
    raw = b"x" * 1_000
    snap = Snapshot(raw, Layout([999], [998], [b"h"]), raw, [0], [b"h"])
    assert snap.nbytes() == 1_000 + 2 * layout_bytes(1_000)


def test_a_snapshot_with_a_view_counts_the_parsed_document_and_the_view():
    raw = b"x" * 10_000
    bare = Snapshot(raw, Layout([9_999], [9_998], [b"h"]), None, [0], [b"h"])
    held = Snapshot(raw, Layout([9_999], [9_998], [b"h"]), None, [0], [b"h"], view=object())
    assert held.nbytes() - bare.nbytes() == doc_bytes(10_000) + view_bytes(10_000) > 2 * 10_000


def test_the_count_bound_still_holds():
    memo = Memo(size=2, max_bytes=1 << 30)
    for k in range(4):
        memo.put(k, _snap(10))
    assert len(memo) == 2 and memo.nbytes == 2 * _snap(10).nbytes()
