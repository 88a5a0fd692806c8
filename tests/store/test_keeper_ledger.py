"""store/keeper_ledger.py: the pauses the keeper decides from, and its pings and keeps, read off a ledger
the real writer wrote."""

from __future__ import annotations

import json

from scalpel_desktop.store.budget_ledger import bets, risk_budget
from scalpel_desktop.store.db import connect
from scalpel_desktop.store.keeper_ledger import KEEPALIVE, keeper_summary, pause_history
from tests.store.test_ledger_queries import write  # (a ledger the real writer wrote)

H = 3600.0


def req(ts, session="s1", **kw):
    return {"ts": ts, "session": session, "endpoint": "messages", "status": 200, "model": "m", "total_ms": 1000.0,
            **kw}


def ping(ts, session="s1", cost=0.01):
    return {"ts": ts, "session": session, "endpoint": KEEPALIVE, "decision": "ping", "status": 200, "model": "m",
            "cache_read": 5000, "output_tokens": 1, "staked_usd": cost}


def test_pauses_are_the_main_conversations_gaps_and_the_answers_nobody_came_back_to():
    write([req(0), req(10), ping(300), req(611),  # pauses of 9 s and 600 s: the ping between breaks neither
           req(20, session="s1", agent="a1"), req(5000, session="s1", agent="a1"),  # a subagent's: not a pause
           req(100, session="s2"),  # one request, then nothing for hours: ended
           req(4 * H, session="s3"), req(4 * H + 31, session="s3")])  # still going (the latest)
    gaps, ended = pause_history(connect())
    assert sorted(round(g) for g in gaps) == [9, 30, 600]
    assert ended == 2  # s1 and s2: not heard from for an hour while the ledger went on; s3 may go on
    assert pause_history(connect(), until=50) == ([9.0], 0)
    assert pause_history(connect(), limit=1)[0] == [30.0]  # the most recent first


def test_the_summary_and_the_budget_count_the_pings_and_the_keeps():
    kept = {"ts": 700, "session": "s1", "endpoint": KEEPALIVE, "decision": "kept", "banked_usd": 0.12,
            "figures": json.dumps({"pings": 2})}
    write([req(0, banked_usd=1.0), ping(270, cost=0.01), ping(540, cost=0.02), kept, req(700)])
    conn = connect()
    got = keeper_summary(conn)
    assert got == {"pings": 2, "ping_cost_usd": 0.03, "kept": 1, "saved_usd": 0.12,
                   "net_usd": got["saved_usd"] - got["ping_cost_usd"]}
    assert keeper_summary(conn, since=500)["pings"] == 1
    saved, staked = risk_budget(conn)  # the user's budget: the pings staked, the keep banked
    assert abs(saved - 1.12) < 1e-12 and abs(staked - 0.03) < 1e-12
    assert bets(conn) == []  # a ping is no warm cut's bet


def test_a_bet_does_not_count_pings_as_requests_it_earned_on():
    bet = json.dumps({"turns_est": 5, "payback_usd": 0.5, "break_reason": "append"})
    write([req(0, staked_usd=0.1, figures=bet), ping(300), ping(570), req(800)])
    (b,) = bets(connect())
    assert b.turns == 1


def test_an_empty_ledger_has_no_pauses():
    assert pause_history(connect()) == ([], 0)
    assert keeper_summary(connect())["pings"] == 0
