"""The misses in ``scalpel bench``: ``"misses"`` in ``--json`` over the real bill, and its table in 80 columns."""

from __future__ import annotations

import io

from rich.console import Console

from scalpel_desktop.accounting.misses import Miss
from scalpel_desktop.bench.ratio import Ratio
from scalpel_desktop.bench.replay import ReplayResult, SessionResult, replay_corpus
from scalpel_desktop.bench.reader import read_file
from scalpel_desktop.bench.report import build_json, render_tables
from tests.bench.test_misses import session


def result() -> ReplayResult:
    a = SessionResult("aaaa1111/main", "/t/a.jsonl", "main", "m", 10, real_cost=6.00, costs={"off": 6.0},
                      ratio=Ratio(0.3, 5.0, 9, "fit", 2.0),
                      misses=[Miss("m", 100_000, 0.60, 0, "ttl-expired"), Miss("m", 20_000, 0.12, 9, "unexplained")])
    b = SessionResult("bbbb2222/main", "/t/b.jsonl", "main", "m", 4, real_cost=2.00, costs={"off": 2.0},
                      ratio=Ratio(0.3, 5.0, 3, "fit", 2.0), misses=[Miss("m", 1_234_567, 0.08, 5, "unexplained")])
    return ReplayResult([a, b], {}, files=2, lines=10, bad_lines=0, policies=["off"], tier=2)


def test_the_json_carries_the_misses_over_the_real_bill():
    doc = build_json(result(), "/c", "2026-01-01", sessions=True)
    assert doc["misses"] == {"count": 3, "tokens": 1_354_567, "cost_usd": 0.8, "cost_pct": 10.0,  # of $8
                             "by_cause": {"ttl-expired": {"count": 1, "tokens": 100_000, "cost_usd": 0.6},
                                          "unexplained": {"count": 2, "tokens": 1_254_567, "cost_usd": 0.2}}}
    a, b = doc["sessions"]
    assert (a["misses"], a["miss_cost_usd"], b["misses"], b["miss_cost_usd"]) == (2, 0.72, 1, 0.08)


def lines(console: Console) -> list[str]:
    render_tables(build_json(result(), "/c", "2026-01-01"), console)
    text = console.file.getvalue() if not console.record else console.export_text()
    start = next(i for i, ln in enumerate(text.splitlines()) if ln.startswith("Cache misses"))
    return text.splitlines()[start:start + 7]


def test_the_table_has_a_row_per_cause_and_the_total_and_fits_80_columns_piped_and_on_a_terminal():
    piped = lines(Console(file=io.StringIO(), width=200, color_system=None))
    terminal = lines(Console(record=True, width=80, force_terminal=True, color_system=None))
    for got in (piped, terminal):
        assert all(len(ln) <= 80 for ln in got), got
        assert got[1].split() == ["cause", "misses", "tokens", "cost", "$", "%", "of", "bill"]
        assert got[3].split() == ["ttl-expired", "1", "100,000", "0.600", "7.50"]
        assert got[4].split() == ["unexplained", "2", "1,254,567", "0.200", "2.50"]
        assert got[6].split() == ["all", "3", "1,354,567", "0.800", "10.00"]


def test_a_replay_reports_the_misses_of_the_real_usage(tmp_path):
    files = [read_file(session(tmp_path / "s.jsonl"))]
    res = replay_corpus(files=files, policies=["off"], hinted=False)
    (s,) = res.sessions
    assert [m.cause for m in s.misses] == ["ttl-expired", "unexplained", "model-switch", "client-rewrite"]
    doc = build_json(res, "/c", "x")
    assert doc["misses"]["tokens"] == 44_500  # 21,000 + 6,500 + 12,000 + 5,000, worked out in test_misses
    assert doc["misses"]["cost_pct"] == round(100 * doc["misses"]["cost_usd"] / doc["real_cost_usd"], 3)
