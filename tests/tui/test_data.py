"""The dashboard's ledger queries against figures computed independently from the seeded rows."""

from __future__ import annotations

import pytest

from scalpel_desktop.paths import dirs
from scalpel_desktop.store.ledger_queries import today_savings
from scalpel_desktop.tui import data
from tests.tui.helpers import CONVERSATION, expected_realized, expected_session, listed_sessions, period_start
from tests.tui.seed import DAY


@pytest.fixture
def conn(seeded):
    c = data.open_ledger(dirs().database)
    yield c
    c.close()


def test_no_ledger_file_means_nothing_to_read():
    assert data.open_ledger(dirs().database) is None


def test_sessions_match_the_seeded_rows(seeded, conn):
    got = data.load_sessions(conn, seeded.now)
    assert [r.session for r in got.rows] == listed_sessions(seeded)
    assert len(got.rows) == 5 and got.active == 2
    todays = [r for r in seeded.requests if period_start(seeded.now, 1) <= r["ts"] <= seeded.now]
    assert got.requests_today == sum(r["endpoint"] in CONVERSATION for r in todays)  # count_tokens calls apart:
    assert got.side_calls_today == sum(r["endpoint"] == "count_tokens" for r in todays) > 0
    tokens, usd = expected_realized(seeded, 1)
    assert tokens > 0 and (got.saved_tokens_today, got.saved_usd_today) == (tokens, pytest.approx(usd))
    today = today_savings(conn, seeded.now)  # the reader's query, the tray's and the statusline's
    assert (got.requests_today, got.saved_tokens_today, got.saved_usd_today) == (today.requests, today.tokens,
                                                                                today.usd)
    for row in got.rows:
        exp = expected_session(seeded, row.session)
        assert row.turns == exp["turns"]
        assert row.context_tokens == exp["context"] and row.context_source == "usage"
        assert row.window == 200_000
        assert row.share == pytest.approx(exp["share"])
        assert row.cache_share == pytest.approx(exp["cache"])
        assert row.realized_tokens == exp["realized"]
        assert row.model == seeded.sessions[row.session]["model"]


def test_sessions_ignore_rows_after_now(seeded, conn):
    """A frozen clock in the past sees the ledger as it was then."""
    earlier = seeded.now - 2 * 3600
    got = data.load_sessions(conn, earlier)
    assert all(r.last_ts <= earlier for r in got.rows)
    live = listed_sessions(seeded)[0]
    assert live not in {r.session for r in got.rows}  # it started 50 minutes before now


def test_savings_periods_are_local_calendar_days(seeded, conn):
    got = data.load_savings(conn, seeded.now)
    assert [p.label for p in got.periods] == ["Today", "7 days", "30 days"]
    for period, days in zip(got.periods, (1, 7, 30)):
        tokens, usd = expected_realized(seeded, days)
        assert tokens > 0
        assert period.realized_tokens == tokens
        assert period.realized_usd == pytest.approx(usd)
        assert period.since == period_start(seeded.now, days)
    # the seed has realized savings older than 30 days: they are left out
    old = [r for r in seeded.requests if r["ts"] < period_start(seeded.now, 30) and r["realized_tokens"]]
    assert old
    today = today_savings(conn, seeded.now)  # the savings tab's Today agrees with every other "today"
    assert (got.periods[0].realized_tokens, got.periods[0].requests) == (today.tokens, today.requests)
    assert got.periods[0].realized_usd == pytest.approx(today.usd)
    assert len(got.days) == 30 and sum(d.realized_tokens for d in got.days) == got.periods[-1].realized_tokens
    assert got.days[-1].realized_tokens == got.periods[0].realized_tokens
    assert got.prices_as_of
    # the risk budget, as `scalpel report` reads it (store/budget_ledger.budget_summary)
    from scalpel_desktop.store.budget_ledger import budget_summary

    assert got.budget == budget_summary(conn, since=period_start(seeded.now, 30))
    assert got.budget["saved_usd"] == pytest.approx(sum(r.get("banked_usd") or 0 for r in seeded.requests))


def test_decisions_log_and_cuts(seeded, conn):
    got = data.load_decisions(conn, seeded.now)
    changed = sorted((r for r in seeded.requests if r["decision"] != "unchanged"), key=lambda r: -r["ts"])
    assert len(got.decisions) == min(200, len(changed))
    assert got.decisions[0].ts == changed[0]["ts"] and got.decisions[0].decision == changed[0]["decision"]
    assert all(d.decision != "unchanged" for d in got.decisions)
    counts: dict[str, int] = {}
    for r in seeded.requests:
        if r["endpoint"] in CONVERSATION:  # a count_tokens call is no request: counted apart
            counts[r["decision"]] = counts.get(r["decision"], 0) + 1
    assert got.counts == counts
    assert got.side_calls == {"count_tokens": sum(r["endpoint"] == "count_tokens" for r in seeded.requests)}
    assert len(got.cuts) == len(seeded.cuts)
    by_id = {c.tool_use_id: c for c in seeded.cuts}
    tools = {tid: tool for s in seeded.sessions.values() for tid, tool in s.get("calls", [])}
    for c in got.cuts:
        rec = by_id[c.tool_use_id]
        assert (c.kind, c.tokens, c.sha256) == (rec.kind, rec.tokens, rec.original_sha256)
        assert c.tool == tools[c.tool_use_id]
        assert c.spill_path.endswith(f"/spill/{rec.original_sha256[:2]}/{rec.original_sha256}")
        assert (c.spill_bytes is not None) == (rec.original_sha256 in seeded.spilled)
    assert any(c.spill_bytes is None for c in got.cuts)  # the seed has a gone spill file
    everything = data.load_decisions(conn, seeded.now, include_unchanged=True)
    assert any(d.decision == "unchanged" for d in everything.decisions)


def test_ledger_version_moves_with_new_rows(seeded, conn):
    before = data.ledger_version(conn)
    from scalpel_desktop.store.ledger import LedgerWriter

    w = LedgerWriter(dirs().database)
    w.submit({"ts": seeded.now - DAY / 2, "session": "s-new", "endpoint": "messages", "decision": "unchanged"})
    assert w.flush(10)
    w.close()
    assert data.ledger_version(conn) != before


def test_window_is_the_models_own_and_1m_when_the_prompt_proves_it():
    import time

    from scalpel_desktop.store import db

    now = time.time()
    conn_w = db.connect()
    conn_w.executemany(
        "INSERT INTO requests (ts, session, model, endpoint, input_tokens, cache_write_5m, cache_write_1h, cache_read, "
        "output_tokens, decision, status) VALUES (?,?,?,'messages',?,?,0,?,10,'unchanged',200)",
        [(now - 30, "opus55", "claude-opus-5-5", 10, 1000, 50_000),  # native 1M window
         (now - 20, "sonnet-big", "claude-sonnet-4-5-20250929", 10, 1000, 300_000),  # over 200k: the 1M beta is on
         (now - 10, "sonnet-small", "claude-sonnet-4-5-20250929", 10, 1000, 50_000)])
    conn_w.commit()
    conn_w.close()
    conn = data.open_ledger(dirs().database)
    try:
        rows = {r.session: r for r in data.load_sessions(conn, now).rows}
    finally:
        conn.close()
    assert rows["opus55"].window == 1_000_000 and rows["opus55"].share == pytest.approx(51_010 / 1_000_000)
    assert rows["sonnet-big"].window == 1_000_000
    assert rows["sonnet-small"].window == 200_000
