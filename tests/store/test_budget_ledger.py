"""store/budget_ledger.py: the risk budget, the bets' outcomes and the TTL evidence, read off a ledger
the real writer wrote (what a restarted proxy starts from)."""

from __future__ import annotations

import json

from scalpel_desktop.store.budget_ledger import bets, risk_budget, ttl_overruns
from scalpel_desktop.store.db import connect
from scalpel_desktop.surgery.remaining import own_budget, own_history
from tests.store.test_ledger_queries import write  # (a ledger the real writer wrote)


def req(ts, session="s1", reason="append", **kw):
    return {"ts": ts, "session": session, "endpoint": "messages", "status": 200, "model": "m", "total_ms": 1000.0,
            "figures": json.dumps({"break_reason": reason}), **kw}


def test_the_budget_is_what_the_ledger_banked_less_what_it_staked_across_restarts():
    write([req(1, banked_usd=0.5), req(2, banked_usd=0.25, session="s2"), req(3, staked_usd=0.1), req(4)])
    conn = connect()
    assert risk_budget(conn) == (0.75, 0.1)
    assert risk_budget(conn, until=2) == (0.75, 0.0)
    b = own_budget(conn)  # what a restarted proxy's economist starts with
    assert abs(b.balance_usd - 0.65) < 1e-12


def test_a_bet_earns_until_the_next_cold_break_or_its_estimate():
    bet = {"turns_est": 3, "payback_usd": 0.3, "break_reason": "append"}
    rows = [req(10, staked_usd=0.15, figures=json.dumps(bet)), req(20), req(30, reason="ttl-expired"), req(40),
            req(100, session="s2", staked_usd=0.02, figures=json.dumps(bet)), req(110, session="s2"),
            req(120, session="s2"), req(130, session="s2"), req(140, session="s2"),
            req(200, session="s3", staked_usd=0.02, figures=json.dumps(bet)), req(210, session="s3")]
    write(rows)
    got = {b.session: b for b in bets(connect())}
    assert (got["s1"].turns, got["s1"].closed) == (1, True)  # the TTL break closed it after one request
    assert abs(got["s1"].lost_usd - (0.15 - 0.1)) < 1e-12  # it earned one request's 0.1 of its 0.15
    assert (got["s2"].turns, got["s2"].closed) == (3, True) and got["s2"].lost_usd == 0.0  # reached its estimate
    assert (got["s3"].turns, got["s3"].closed) == (1, False)  # may go on: not evidence yet
    hist = own_history(connect())
    assert sorted(hist.bets) == [(3, 1), (3, 3)]


def test_reads_after_gaps_past_the_ttl_say_whether_the_cache_was_alive():
    rows = [req(0, cache_read=5000), req(1 + 301.8, cache_read=6000),  # read as far as before: alive
            req(1000, session="s2", cache_read=8000), req(1001 + 306.7, session="s2", cache_read=100),  # gone
            req(5000, session="s3", cache_read=8000, cache_write_1h=10), req(5001 + 400, session="s3", cache_read=0)]
    write(rows)
    seen = ttl_overruns(connect())
    assert [(round(o, 1), a) for o, a in seen] == [(1.8, True), (6.7, False)]  # the 1 h one: no gap past its TTL
    assert len(own_history(connect()).overruns) == 2
