"""The context breakdown's arithmetic and the Usage tab's data, from a ledger written by the real writer."""

from __future__ import annotations

from scalpel_desktop.store.ledger_queries import open_readonly
from scalpel_desktop.tui.views_data import context_breakdown, load_usage, project_name, scale_to
from tests.tui.seed import NOW


def test_scale_to_sums_exactly_and_keeps_proportions():
    out = scale_to({"a": 1, "b": 1, "c": 1}, 100)
    assert sum(out.values()) == 100 and sorted(out.values()) == [33, 33, 34]
    assert scale_to({"a": 0, "b": 0}, 50) == {"a": 0, "b": 0}
    assert scale_to({"a": 3100, "b": 9200}, 12_300) == {"a": 3100, "b": 9200}


def test_breakdown_of_every_listed_session_is_consistent(seeded):
    conn = open_readonly()
    try:
        for session in {r["session"] for r in seeded.requests if r["ts"] >= NOW - 86400}:
            ctx = context_breakdown(conn, session, NOW)
            assert ctx is not None and ctx.window == 200_000
            if ctx.regions:
                assert sum(t for _, _, t in ctx.regions) == ctx.total
                tool_results = dict((k, t) for k, _, t in ctx.regions)["tool_results"]
                assert ctx.dead_left is None or 0 <= ctx.dead_left <= tool_results
            assert ctx.free == max(0, 200_000 - ctx.total)
        data = load_usage(conn, NOW)
    finally:
        conn.close()
    assert data.days and data.months and data.blocks
    assert [d.key for d in data.days] == sorted(d.key for d in data.days)
    assert data.active_block is not None and data.active_block.projected_tokens >= data.active_block.tally.total_tokens
    assert project_name("~/work/scalpel/") == "scalpel" and project_name("/srv") == "srv"
