"""The memo of previous requests is bounded by what it holds (estimated bytes) as well as by count."""

from __future__ import annotations

from scalpel_desktop.exchange import Exchange
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
    assert snap.nbytes() == 1_000 + 2 * layout_bytes(1)


def test_a_snapshot_with_a_view_counts_the_parsed_document_and_the_view():
    raw = b"x" * 10_000
    bare = Snapshot(raw, Layout([9_999], [9_998], [b"h"]), None, [0], [b"h"])
    held = Snapshot(raw, Layout([9_999], [9_998], [b"h"]), None, [0], [b"h"], view=object())
    assert held.nbytes() - bare.nbytes() == doc_bytes(10_000, 1) + view_bytes(10_000, 1) > 2 * 10_000


def test_the_count_bound_still_holds():
    memo = Memo(size=2, max_bytes=1 << 30)
    for k in range(4):
        memo.put(k, _snap(10))
    assert len(memo) == 2 and memo.nbytes == 2 * _snap(10).nbytes()


def test_the_stage_keeps_its_memo_within_the_memo_mb_setting_over_many_conversations(tmp_path):
    """Conversations of ~300 KB through the shipped stage with ``memo_mb`` = 2: what the memo
    holds (its estimate: bodies, parsed documents, views) never passes the setting, so it keeps
    fewer snapshots than its count bound would; a larger setting, read live, keeps more."""
    from scalpel_desktop.accounting.prices import PriceTable
    from scalpel_desktop.exchange import ApiRequest, ResponseResult
    from scalpel_desktop.store.db import connect
    from scalpel_desktop.surgery.stage import build_surgery_stage
    from scalpel_desktop.surgery.testing import SessionBuilder, file_text
    from scalpel_desktop.wire.held import MB
    from scalpel_desktop.wire.jsoncodec import dumps
    from scalpel_desktop.wire.usage import Usage

    config = {"policy": "cold", "tier": 2, "memo_mb": 2}
    stage = build_surgery_stage(config, connect(tmp_path / "l.db"), tmp_path / "spill", PriceTable.builtin())
    sessions = []
    for c in range(6):
        s = SessionBuilder(session_id=f"00000000-0000-4000-8000-{c:012d}")
        while len(dumps(s.body())) < 300_000:
            s.call("Read", {"file_path": f"/p{c}/f{len(s.body()['messages'])}.py"}, file_text(f"{c}", 80))
        sessions.append(s)
    t = 1000.0
    held = []
    for rnd in range(3):
        if rnd == 2:
            config["memo_mb"] = 8  # read live
        for s in sessions:
            s.call("Read", {"file_path": f"/p/next{rnd}.py"}, file_text("n", 10))
            body = dumps(s.body())
            ex = Exchange(ApiRequest("POST", "/v1/messages", "", "anthropic", "messages",
                                     {"x-claude-code-session-id": s.session_id}, body, t))
            stage.on_request(ex)
            ex.response = ResponseResult(200, Usage(cache_read=1000), 1, 1, t + 1)
            stage.on_response(ex)
            t += 2
            memo = stage.memo
            assert memo.nbytes == sum(memo._sizes.values()) <= config["memo_mb"] * MB
            assert all(x.nbytes() >= 3 * len(x.raw) for x in memo._items.values() if x.view is not None)
            held.append((rnd, len(memo)))
    assert max(n for rnd, n in held if rnd < 2) < 6  # the byte budget, not the count, bounded it
    assert max(n for rnd, n in held if rnd == 2) > max(n for rnd, n in held if rnd < 2)


def test_a_snapshot_changed_after_it_was_put_is_taken_off_by_what_it_was_counted_as():
    memo = Memo(size=8, max_bytes=1 << 30)
    snap = _snap(5_000)
    memo.put("a", snap)
    counted = memo.nbytes
    snap.view = object()  # now it would estimate more (a parsed document and a view)
    assert snap.nbytes() > counted
    memo.drop("a")
    assert memo.nbytes == 0 and len(memo) == 0  # no drift: the figure put is the figure taken off


def test_lowering_the_budget_drops_least_recently_used_at_once():
    memo = Memo(size=8, max_bytes=1 << 30)
    for k in range(4):
        memo.put(k, _snap(10_000))
    each = _snap(10_000).nbytes()
    memo.get(0)  # 0 most recently used: 1 and 2 go first
    memo.max_bytes = 2 * each
    assert [k for k in range(4) if memo.get(k) is not None] == [0, 3] and memo.nbytes == 2 * each
    memo.max_bytes = 0
    assert len(memo) == 0 and memo.nbytes == 0


def test_many_small_messages_count_more_than_the_same_bytes_in_few():
    """The estimate follows the structure: 2,000 messages hold more objects than 2 of the same size."""
    raw = b"x" * 1_000_000
    few = Snapshot(raw, Layout([1, 2], [1, 1], [b"h"] * 2), None, [0, 0], [b"h"] * 2, view=object())
    many = Snapshot(raw, Layout(list(range(2_000)), [1] * 2_000, [b"h"] * 2_000), None, [0] * 2_000,
                    [b"h"] * 2_000, view=object())
    assert many.nbytes() - few.nbytes() >= 2_000 * 1_000  # ~1 KB a message more: dicts, lists, view records


def test_room_is_made_before_an_analysis_whose_snapshot_would_push_others_out():
    """The old snapshots the new one would evict at ``put`` go before it is built (lower peak);
    those it leaves room for stay, and a body above the whole budget pushes nothing out."""
    from scalpel_desktop.wire.held import doc_bytes, layout_bytes, view_bytes

    def with_view(n: int) -> Snapshot:
        return Snapshot(b"r" * n, Layout([n - 1], [n - 2], [b"h"]), None, [0], [b"h"], view=object())

    each = with_view(100_000).nbytes()
    need = 100_000 + 2 * layout_bytes(1) + doc_bytes(100_000, 1) + view_bytes(100_000, 1)
    assert need == each  # the room asked for is what its snapshot will be counted as
    memo = Memo(size=8, max_bytes=3 * each)
    for k in range(3):
        memo.put(k, with_view(100_000))
    memo.make_room(100_000, 1)
    assert [k for k in range(3) if memo.get(k) is not None] == [1, 2]  # the oldest only
    memo.make_room(10_000_000, 1)  # never kept: nothing dropped for it
    assert len(memo) == 2
    memo.put(3, with_view(100_000))
    assert len(memo) == 3 and memo.nbytes == 3 * each


def test_messages_in_counts_only_a_list_of_messages():
    from scalpel_desktop.surgery.memo import messages_in

    assert messages_in({"messages": [{}, {}]}) == 2
    assert messages_in({"messages": 5}) == messages_in({"messages": "xy"}) == messages_in({}) == 0
    assert messages_in([1, 2]) == messages_in(None) == 0


def test_a_body_whose_messages_are_not_a_list_passes_the_stage_without_an_error(tmp_path):
    """Making room counts messages: a wrong type there is no exception, the body is left alone."""
    from scalpel_desktop.accounting.prices import PriceTable
    from scalpel_desktop.exchange import ApiRequest
    from scalpel_desktop.store.db import connect
    from scalpel_desktop.surgery.stage import build_surgery_stage

    stage = build_surgery_stage({"policy": "death"}, connect(tmp_path / "l.db"), tmp_path / "spill",
                                PriceTable.builtin())
    stage.defer_first_sightings = False  # the full path, where room is made before the view
    for body in (b'{"model":"claude-sonnet-4-6","messages":5}', b'{"model":"claude-sonnet-4-6","messages":{"a":1}}'):
        ex = Exchange(ApiRequest("POST", "/v1/messages", "", "anthropic", "messages", {}, body, 1000.0))
        stage.on_request(ex)
        assert ex.new_body is None
