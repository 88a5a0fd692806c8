"""The memo of previous requests is bounded by bytes as well as by count."""

from __future__ import annotations

from scalpel_desktop.surgery.memo import Memo, Snapshot
from scalpel_desktop.wire.layout import Layout


def _snap(n: int, sent: int | None = None) -> Snapshot:
    raw = b"r" * n
    return Snapshot(raw, Layout([n - 1], [n - 2], [b"h"]), None if sent is None else b"s" * sent, [0], [b"h"])


def test_the_byte_budget_evicts_least_recently_used_first():
    memo = Memo(size=100, max_bytes=10_000)
    for k in range(5):
        memo.put(k, _snap(2_000, sent=1_000))  # 3,000 bytes each: three fit
    assert memo.nbytes <= 10_000
    assert [k for k in range(5) if memo.get(k) is not None] == [2, 3, 4]
    assert memo.nbytes == 9_000
    memo.get(2)  # 2 is now the most recently used: 3 goes next
    memo.put(5, _snap(2_000))
    assert memo.get(3) is None and memo.get(2) is not None and memo.get(5) is not None
    assert memo.nbytes == sum(s.nbytes() for s in memo._items.values()) <= 10_000


def test_replacing_and_dropping_keep_the_count_exact_and_oversized_is_not_kept():
    memo = Memo(size=8, max_bytes=10_000)
    memo.put("a", _snap(4_000))
    memo.put("a", _snap(5_000))  # replaces: counted once
    assert memo.nbytes == 5_000 and len(memo) == 1
    memo.put("b", _snap(20_000))  # larger than the whole budget: not kept, nothing else lost
    assert memo.get("b") is None and memo.get("a") is not None and memo.nbytes == 5_000
    memo.drop("a")
    assert memo.nbytes == 0 and len(memo) == 0


def test_a_sent_body_that_is_the_received_one_counts_once():
    raw = b"x" * 1_000
    snap = Snapshot(raw, Layout([999], [998], [b"h"]), raw, [0], [b"h"])
    assert snap.nbytes() == 1_000


def test_the_count_bound_still_holds():
    memo = Memo(size=2, max_bytes=1 << 30)
    for k in range(4):
        memo.put(k, _snap(10))
    assert len(memo) == 2 and memo.nbytes == 20
