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


def test_the_misses_of_each_period_are_the_seeded_rows_grouped(seeded):
    from scalpel_desktop.tui.views_data import MISS_PERIODS, load_misses
    from tests.tui.helpers import expected_misses

    conn = open_readonly()
    try:
        data = load_misses(conn, NOW)
    finally:
        conn.close()
    assert [p.label for p in data.periods] == [label for label, _ in MISS_PERIODS]
    counts = []
    for p, (_, days) in zip(data.periods, MISS_PERIODS):
        want = expected_misses(seeded, days)
        assert want["count"] > 0  # the seed has misses in every period, or this test proves nothing
        assert (p.count, p.tokens_rewritten) == (want["count"], want["tokens"])
        assert abs(p.cost_usd - want["cost"]) < 1e-6 and abs(p.bill_usd - want["bill"]) < 1e-6
        assert abs(p.bill_share - want["cost"] / want["bill"]) < 1e-9
        assert {c.cause: (c.count, c.tokens_rewritten) for c in p.causes} == {
            c: v[:2] for c, v in want["by_cause"].items()}
        assert abs(sum(p.share(c.cost_usd) for c in p.causes) - 1.0) < 1e-9
        assert {s.session: (s.count, s.main_cause) for s in p.sessions} == {
            s: (v[0], v[2]) for s, v in want["by_session"].items()}
        assert [s.cost_usd for s in p.sessions] == sorted((s.cost_usd for s in p.sessions), reverse=True)
        counts.append(p.count)
    assert counts == sorted(counts) and counts[0] < counts[-1]  # today within 7 days within 30 days
    titled = {s for s, info in seeded.sessions.items() if "title" in info}
    assert {s: data.names.title[s] for s in titled & set(data.names.title)} == {
        s: seeded.sessions[s]["title"] for s in titled & set(data.names.title)}
    assert titled & set(data.names.title)  # a session with misses has its title from its transcript


def test_a_ledger_without_requests_has_no_misses_to_show(tmp_path):
    import sqlite3

    from scalpel_desktop.tui.views_data import load_misses

    conn = sqlite3.connect(tmp_path / "empty.sqlite3")
    assert load_misses(conn, NOW).missing == "the ledger has no requests table yet"
