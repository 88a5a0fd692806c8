from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from scalpel_desktop.accounting.prices import PriceTable
from scalpel_desktop.cli import main
from scalpel_desktop.paths import dirs
from scalpel_desktop.store import db

M = 1_000_000


def seed_default_ledger() -> list[tuple]:
    now = time.time()
    rows = [  # ts, session, model, input, w5, w1, read, out, decision, removed, realized_t, realized_usd
        (now - 3600, "s1", "claude-sonnet-4-5-20250929", 10, 4000, 0, 0, 300, "unchanged", 0, None, None),
        (now - 1800, "s1", "claude-sonnet-4-5-20250929", 20, 500, 0, 4000, 200, "cut", 900, 900, 0.00027),
        (now - 9 * 86400, "s2", "claude-opus-4-1-20250805", 5, 0, 3000, 10_000, 100, "unchanged", 0, None, None),
        (now - 60, "s3", "claude-unknown-x", 1, 0, 0, 0, 1, "paused", 0, None, None),
    ]
    conn = db.connect()
    conn.executemany(
        "INSERT INTO requests (ts, session, model, input_tokens, cache_write_5m, cache_write_1h, cache_read, "
        "output_tokens, decision, tokens_removed, realized_tokens, realized_usd, status) "
        "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,200)", rows)
    conn.commit()
    conn.close()
    return rows


def test_missing_ledger_says_so(capsys):
    assert main(["report"]) == 0
    out = capsys.readouterr().out
    assert "No ledger yet" in out and "scalpel start" in out
    assert not dirs().database.exists()  # reading never creates it


def test_missing_ledger_json(capsys):
    assert main(["report", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["total"]["requests"] == 0 and "no ledger" in data["message"]


def test_empty_ledger_says_so(capsys):
    db.connect().close()
    assert main(["report", "--since", "7d"]) == 0
    assert "The ledger is empty since" in capsys.readouterr().out


def test_json_report_figures(capsys):
    rows = seed_default_ledger()
    assert main(["report", "--json", "--by", "model"]) == 0
    data = json.loads(capsys.readouterr().out)
    prices = PriceTable.load()
    t = data["total"]
    assert t["requests"] == len(rows)
    assert t["tokens"]["cache_read"] == sum(r[6] for r in rows)
    cost = sum(r[3] * prices.rates(r[2]).input + r[4] * prices.rates(r[2]).write_5m + r[5] * prices.rates(r[2]).write_1h
               + r[6] * prices.rates(r[2]).cache_read + r[7] * prices.rates(r[2]).output for r in rows)
    assert t["cost_usd"] == pytest.approx(cost)
    # a row without provenance columns (written before m004) counts as estimated, with no bound
    assert t["realized"] == {"tokens": 900, "usd": pytest.approx(0.00027), "error_usd": 0.0,
                             "unbounded_usd": pytest.approx(0.00027), "sources": {"estimate": 1}, "tier": "usage"}
    assert t["projected"]["changed_requests"] == 1  # the "cut" row; "paused" and "unchanged" changed nothing
    assert {g["key"] for g in data["groups"]} == {r[2] for r in rows}
    assert data["prices"]["as_of"] == prices.as_of
    assert data["assumed_prices"] == {"claude-unknown-x": "claude-sonnet-4 (assumed)"}


def test_since_and_by_day_table(capsys):
    seed_default_ledger()
    assert main(["report", "--since", "7d", "--by", "day"]) == 0
    out = capsys.readouterr().out
    assert "3 requests since" in out
    assert "prices as of" in out and "realized" in out and "projected" in out
    assert "assumed:" in out and "claude-unknown-x" in out
    assert "total" in out


def test_by_session_json_groups(capsys):
    seed_default_ledger()
    assert main(["report", "--by", "session", "--json"]) == 0
    groups = {g["key"]: g for g in json.loads(capsys.readouterr().out)["groups"]}
    assert groups["s1"]["requests"] == 2
    assert groups["s1"]["cache_share"] == pytest.approx(4000 / (10 + 4000 + 20 + 500 + 4000))


def test_count_tokens_calls_are_shown_apart_from_the_requests(capsys):
    rows = seed_default_ledger()
    m = 5
    conn = db.connect()
    conn.executemany("INSERT INTO requests (ts, session, endpoint, model, status, decision) "
                     "VALUES (?, 's1', 'count_tokens', 'claude-sonnet-4-5-20250929', 200, 'unchanged')",
                     [(time.time() - 100 - i,) for i in range(m)])
    conn.commit()
    conn.close()
    assert main(["report", "--by", "session"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == f"scalpel report: {len(rows)} requests"
    assert f"not requests, in no figure above: {m} count_tokens calls" in out
    s1 = next(ln for ln in out.splitlines() if ln.startswith("s1 "))
    assert s1.split()[1] == str(sum(r[1] == "s1" for r in rows))  # the session's requests alone
    assert "unchanged 2" in out  # the decisions count requests only (2 seeded "unchanged" requests)
    assert main(["report", "--json"]) == 0
    total = json.loads(capsys.readouterr().out)["total"]
    assert (total["requests"], total["side_calls"]) == (len(rows), {"count_tokens": m})


def test_only_count_tokens_calls_are_no_requests(capsys):
    conn = db.connect()
    conn.execute("INSERT INTO requests (ts, endpoint, status) VALUES (?, 'count_tokens', 200)", (time.time(),))
    conn.commit()
    conn.close()
    assert main(["report"]) == 0
    out = capsys.readouterr().out
    assert "has no requests" in out and "only 1 count_tokens calls" in out


def test_bad_since_is_a_clear_error(capsys):
    seed_default_ledger()
    assert main(["report", "--since", "yesterday-ish"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("scalpel: --since 'yesterday-ish'") and "7d" in err


def test_corrupt_ledger_is_a_clear_error(capsys, tmp_path):
    bad = tmp_path / "bad.sqlite3"
    bad.write_bytes(b"junk" * 1000)
    assert main(["report", "--db", str(bad)]) == 1
    assert "cannot read the ledger" in capsys.readouterr().err


def test_help_runs_as_a_real_command():
    out = subprocess.run([sys.executable, "-m", "scalpel_desktop", "report", "--help"], capture_output=True, text=True,
                         env=os.environ, timeout=60)
    assert out.returncode == 0
    assert "--since" in out.stdout and "--by" in out.stdout and "--json" in out.stdout


def test_the_report_shows_the_risk_budget_from_the_ledger(capsys):
    # What the warm cuts' bets draw on, as the ledger holds it: banked less staked, and how the bets did.
    import json as _json

    from scalpel_desktop.cli import main as _main
    from scalpel_desktop.paths import dirs as _dirs
    from scalpel_desktop.store.ledger import LedgerWriter

    w = LedgerWriter(_dirs().database)
    bet = _json.dumps({"turns_est": 2, "payback_usd": 0.2, "break_reason": "append"})
    for row in ({"ts": 1.0, "banked_usd": 0.5}, {"ts": 2.0, "staked_usd": 0.3, "figures": bet},
                {"ts": 3.0, "figures": _json.dumps({"break_reason": "ttl-expired"})}):
        assert w.submit({"session": "s1", "endpoint": "messages", "status": 200, "model": "claude-opus-4-5", **row})
    assert w.flush(30)
    w.close()
    assert _main(["report", "--json"]) == 0
    bud = _json.loads(capsys.readouterr().out)["risk_budget"]
    assert (bud["saved_usd"], bud["staked_usd"], bud["bets"], bud["bets_open"]) == (0.5, 0.3, 1, 0)
    assert abs(bud["bets_lost_usd"] - 0.3) < 1e-12  # closed by the TTL break before it earned anything
    assert _main(["report"]) == 0
    out = capsys.readouterr().out
    assert "risk budget" in out and "lost $0.30" in out.replace("$0.300", "$0.30")


def test_the_report_shows_the_misses_beside_the_savings(capsys, monkeypatch):
    seed_default_ledger()
    conn = db.connect()
    conn.execute("UPDATE requests SET miss_cause = 'ttl-expired', miss_tokens = 3500, miss_usd = 0.0121 "
                 "WHERE session = 's1' AND decision = 'cut'")
    conn.commit()
    conn.close()
    assert main(["report", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["misses"]["count"] == 1 and data["misses"]["by_cause"] == {"ttl-expired": {"count": 1,
                                                                                       "cost_usd": 0.0121}}
    monkeypatch.setenv("COLUMNS", "100")
    assert main(["report"]) == 0
    out = capsys.readouterr().out
    assert "cache misses: 1 re-wrote 3,500 tokens, $0.0121 beyond a read (ttl-expired 1 ($0.0121))" in " ".join(
        out.split())
    assert main(["report", "--json", "--since", "1m"]) == 0  # the miss is older: none in the window
    assert json.loads(capsys.readouterr().out)["misses"]["count"] == 0


def test_the_report_shows_the_cache_keepers_pings_and_the_rewrites_they_avoided(capsys):
    seed_default_ledger()
    now = time.time()
    conn = db.connect()
    conn.executemany("INSERT INTO requests (ts, session, endpoint, decision, model, cache_read, output_tokens, "
                     "staked_usd, banked_usd, status) VALUES (?,?,?,?,?,?,?,?,?,200)",
                     [(now - 1500, "s1", "keepalive", "ping", "claude-sonnet-4-5-20250929", 4000, 1, 0.0012, None),
                      (now - 1300, "s1", "keepalive", "ping", "claude-sonnet-4-5-20250929", 4000, 1, 0.0012, None),
                      (now - 1000, "s1", "keepalive", "kept", "claude-sonnet-4-5-20250929", None, None, None, 0.0138)])
    conn.commit()
    conn.close()
    assert main(["report", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["keeper"]["pings"] == 2 and rep["keeper"]["kept"] == 1
    assert rep["keeper"]["net_usd"] == pytest.approx(0.0138 - 0.0024)
    assert rep["total"]["requests"] == 4  # the pings are no request of the conversation
    assert main(["report"]) == 0
    out = capsys.readouterr().out
    assert "cache keeper: 2 keep-alive pings cost $0.0024" in out and "1 re-write avoided saved $0.0138" in out
