from __future__ import annotations

import random
import sqlite3
from datetime import datetime

import pytest

from scalpel_desktop.accounting.prices import PriceTable
from scalpel_desktop.accounting.report import ReportError, build_report, parse_since
from scalpel_desktop.store import db

M = 1_000_000
MODELS = ["claude-sonnet-4-5-20250929", "claude-opus-4-1-20250805", "claude-haiku-4-5-20251001", "claude-mystery-9"]
NOW = datetime(2026, 11, 20, 15, 30).timestamp()


def seed(conn: sqlite3.Connection, n: int = 300, seed_: int = 7) -> list[dict]:
    rnd = random.Random(seed_)
    rows = []
    for i in range(n):
        has_usage = rnd.random() > 0.1
        changed = rnd.random() < 0.3
        r = {
            "ts": NOW - rnd.uniform(0, 5 * 86400),
            "session": rnd.choice(["sA", "sB", "sC", None]),
            "model": rnd.choice(MODELS),
            "status": rnd.choice([200] * 9 + [529]),
            "body_bytes": rnd.randint(1000, 500_000),
            "input_tokens": rnd.randint(0, 5000) if has_usage else None,
            "cache_write_5m": rnd.randint(0, 20_000) if has_usage else None,
            "cache_write_1h": rnd.randint(0, 20_000) if has_usage else None,
            "cache_read": rnd.randint(0, 190_000) if has_usage else None,
            "output_tokens": rnd.randint(0, 3000) if has_usage else None,
            "decision": "cut" if changed else rnd.choice(["unchanged", "paused", "error"]),
            "tokens_removed": rnd.randint(100, 9000) if changed else 0,
            "realized_tokens": rnd.randint(0, 9000) if changed else None,
            "realized_usd": rnd.uniform(0, 0.05) if changed else None,
        }
        r["sent_bytes"] = r["body_bytes"] - (r["tokens_removed"] * 3)
        rows.append(r)
        cols = list(r)
        conn.execute(f"INSERT INTO requests ({','.join(cols)}) VALUES ({','.join('?' * len(cols))})", [r[c] for c in cols])
    conn.commit()
    return rows


@pytest.fixture
def conn(tmp_path):
    c = db.connect(tmp_path / "l.sqlite3")
    yield c
    c.close()


TIERS = [("input", "input_tokens"), ("write_5m", "cache_write_5m"), ("write_1h", "cache_write_1h"),
         ("cache_read", "cache_read"), ("output", "output_tokens")]


def expected(rows: list[dict], prices: PriceTable) -> dict:
    """The report's figures, recomputed here the plain way."""
    e = {"requests": len(rows), "tokens": {t: 0 for t, _ in TIERS}, "cost": 0.0, "realized_t": 0, "realized_usd": 0.0,
         "projected_t": 0, "projected_usd": 0.0, "decisions": {}, "errors": 0}
    for r in rows:
        e["decisions"][r["decision"]] = e["decisions"].get(r["decision"], 0) + 1
        e["errors"] += r["status"] >= 400
        rates = prices.rates(r["model"])
        if r["input_tokens"] is not None:
            prompt = r["input_tokens"] + r["cache_write_5m"] + r["cache_write_1h"] + r["cache_read"]
            if rates.long_context and prompt > rates.long_context_above:
                rates = rates.long_context
            for tier, col in TIERS:
                e["tokens"][tier] += r[col]
                e["cost"] += r[col] * getattr(rates, tier)
        e["realized_t"] += r["realized_tokens"] or 0
        e["realized_usd"] += r["realized_usd"] or 0.0
        e["projected_t"] += r["tokens_removed"]
        e["projected_usd"] += r["tokens_removed"] * prices.rates(r["model"]).cache_read
    prompt = sum(e["tokens"][t] for t in ("input", "write_5m", "write_1h", "cache_read"))
    e["cache_share"] = e["tokens"]["cache_read"] / prompt
    return e


def check(got: dict, e: dict) -> None:
    assert got["requests"] == e["requests"]
    assert got["tokens"] == e["tokens"]
    assert got["cost_usd"] == pytest.approx(e["cost"])
    assert got["cache_share"] == pytest.approx(e["cache_share"])
    assert got["decisions"] == e["decisions"]
    assert got["errors"] == e["errors"]
    assert got["realized"]["tokens"] == e["realized_t"]
    assert got["realized"]["usd"] == pytest.approx(e["realized_usd"])
    assert got["projected"]["tokens"] == e["projected_t"]
    assert got["projected"]["usd"] == pytest.approx(e["projected_usd"])


def test_totals_match_an_independent_computation(conn):
    rows = seed(conn)
    prices = PriceTable.builtin()
    rep = build_report(conn, prices=prices)
    check(rep["total"], expected(rows, prices))
    assert rep["prices"]["as_of"] == prices.as_of
    assert rep["assumed_prices"] == {"claude-mystery-9": "claude-sonnet-4 (assumed)"}
    assert rep["groups"] == []
    assert "cache-read" in rep["projected_weight"]


@pytest.mark.parametrize("by", ["day", "session", "model"])
def test_groups_match_and_add_up(conn, by):
    rows = seed(conn)
    prices = PriceTable.builtin()
    rep = build_report(conn, by=by, prices=prices)

    def key(r):
        if by == "day":
            return datetime.fromtimestamp(r["ts"]).strftime("%Y-%m-%d")
        v = r[by]
        return v if v is not None else "(none)"

    keys = sorted({key(r) for r in rows})
    assert sorted(g["key"] for g in rep["groups"]) == keys
    for g in rep["groups"]:
        check(g, expected([r for r in rows if key(r) == g["key"]], prices))
    assert sum(g["requests"] for g in rep["groups"]) == rep["total"]["requests"]
    assert sum(g["cost_usd"] for g in rep["groups"]) == pytest.approx(rep["total"]["cost_usd"])
    if by == "day":
        assert [g["key"] for g in rep["groups"]] == keys


def test_since_filters(conn):
    rows = seed(conn)
    prices = PriceTable.builtin()
    since = parse_since("2d", now=NOW)
    rep = build_report(conn, since=since, prices=prices)
    check(rep["total"], expected([r for r in rows if r["ts"] >= since], prices))
    assert 0 < rep["total"]["requests"] < len(rows)


def test_a_hand_computed_row(conn):
    conn.execute("INSERT INTO requests (ts, model, status, input_tokens, cache_write_5m, cache_write_1h, cache_read, "
                 "output_tokens, decision, tokens_removed, realized_tokens, realized_usd) "
                 "VALUES (?, 'claude-opus-4-1-20250805', 200, 100, 3500, 0, 40000, 200, 'cut', 240, 240, 0.00036)",
                 (NOW,))
    conn.commit()
    t = build_report(conn, prices=PriceTable.builtin())["total"]
    # Opus 4.1: $15 in, $18.75 5m write, $1.50 cache read, $75 out per MTok
    assert t["cost_usd"] == pytest.approx((100 * 15 + 3500 * 18.75 + 40000 * 1.5 + 200 * 75) / M)
    assert t["cache_share"] == pytest.approx(40000 / 43600)
    assert (t["realized"]["tokens"], t["realized"]["usd"]) == (240, pytest.approx(0.00036))
    assert t["projected"]["tokens"] == 240 and t["projected"]["usd"] == pytest.approx(240 * 1.5 / M)


def test_empty_ledger(conn):
    rep = build_report(conn, by="day", prices=PriceTable.builtin())
    assert rep["total"]["requests"] == 0 and rep["groups"] == [] and rep["total"]["cache_share"] is None


@pytest.mark.parametrize("text, back", [("24h", 86400), ("7d", 7 * 86400), ("30m", 1800), ("2w", 14 * 86400)])
def test_parse_since_relative(text, back):
    assert parse_since(text, now=NOW) == NOW - back


def test_parse_since_dates():
    assert parse_since("2026-11-01") == datetime(2026, 11, 1).timestamp()
    assert parse_since("2026-11-01T08:30") == datetime(2026, 11, 1, 8, 30).timestamp()
    assert parse_since(None) is None
    with pytest.raises(ReportError, match="7d"):
        parse_since("last tuesday")


def test_bad_by():
    with pytest.raises(ReportError, match="day, session, model"):
        build_report(sqlite3.connect(":memory:"), by="week")


def test_realized_carries_the_error_bound_of_each_rows_ratio():
    """Two calibrated rows (one fitted with a 2% bound, one pooled with 5%) and one whose
    ratio has no bound: the bound is the sum of each row's, the unbounded dollars apart."""
    conn = db.connect()
    rows = [(0.010, "fit", 2.0, "cut"), (0.020, "pooled", 5.0, "replayed+filtered"), (0.004, "own_request", None,
                                                                                       "replayed")]
    conn.executemany("INSERT INTO requests (ts, model, decision, realized_tokens, realized_usd, realized_tokens_by, "
                     "ratio_error_pct) VALUES (?, 'claude-opus-5-5', ?, 100, ?, ?, ?)",
                     [(NOW, d, usd, by, err) for usd, by, err, d in rows])
    conn.execute("INSERT INTO requests (ts, model, decision) VALUES (?, 'claude-opus-5-5', 'unchanged')", (NOW,))
    conn.commit()
    t = build_report(conn, prices=PriceTable.builtin())["total"]
    assert t["realized"]["usd"] == pytest.approx(0.034)
    assert t["realized"]["error_usd"] == pytest.approx(0.010 * 0.02 + 0.020 * 0.05)
    assert t["realized"]["unbounded_usd"] == pytest.approx(0.004)
    assert t["realized"]["sources"] == {"fit": 1, "own_request": 1, "pooled": 1}
    assert t["projected"]["changed_requests"] == 3
    assert t["decisions"] == {"cut": 1, "replayed": 1, "replayed+filtered": 1, "unchanged": 1}


@pytest.mark.parametrize("by", [None, "day", "session", "model"])
def test_count_tokens_calls_are_counted_apart_never_as_requests(conn, by):
    """N requests and M count_tokens calls (even ones carrying figures a request would): the report
    says N requests with the N's figures alone, and M count_tokens calls apart."""
    rows = seed(conn, n=120)
    rnd = random.Random(3)
    calls = []
    for i in range(37):
        c = {"ts": NOW - rnd.uniform(0, 5 * 86400), "session": rnd.choice(["sA", "sB"]), "endpoint": "count_tokens",
             "model": rnd.choice(MODELS[:2] + ["claude-only-counted"]), "status": 200, "input_tokens": 50_000,
             "cache_read": 0, "cache_write_5m": 0, "cache_write_1h": 0, "output_tokens": 0, "decision": "unchanged",
             "tokens_removed": 400, "realized_tokens": 300, "realized_usd": 1.0}
        cols = list(c)
        conn.execute(f"INSERT INTO requests ({','.join(cols)}) VALUES ({','.join('?' * len(cols))})",
                     [c[k] for k in cols])
        calls.append(c)
    conn.commit()
    prices = PriceTable.builtin()
    rep = build_report(conn, by=by, prices=prices)
    check(rep["total"], expected(rows, prices))
    assert rep["total"]["side_calls"] == {"count_tokens": len(calls)}
    if by is not None:
        assert sum(g["requests"] for g in rep["groups"]) == len(rows)
        assert all(g["requests"] > 0 for g in rep["groups"])  # no group of count_tokens calls alone
        assert "claude-only-counted" not in {g["key"] for g in rep["groups"]}
