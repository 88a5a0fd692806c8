"""``bench/report.py``: the --json document, the tables and the HTML page of a small replay result.

The result is built by hand (``bench/replay.py``'s types), so every figure below is
worked out from the costs given here, not read back from the code.
"""

from __future__ import annotations

import json

import pytest
from rich.console import Console

from scalpel_desktop.bench.ratio import Ratio
from scalpel_desktop.bench.replay import ReplayResult, SessionResult
from scalpel_desktop.bench.report import build_json, render_html, render_tables


def result() -> ReplayResult:
    a = SessionResult("aaaa1111/main", "/t/a.jsonl", "main", "claude-sonnet-4-5", 10, real_cost=1.00,
                      costs={"off": 1.01, "cold": 0.81, "cold:hinted": 0.91, "ceiling": 0.61},
                      ratio=Ratio(0.3, 5.0, 9, "fit", 2.0), cuts={"cold": 3, "cold:hinted": 2})
    b = SessionResult("bbbb2222/<agent&1>", "/t/b.jsonl", "subagent", "claude-haiku-4-5", 4, real_cost=3.00,
                      costs={"off": 3.30, "cold": 3.33, "cold:hinted": 3.30, "ceiling": 3.00},
                      ratio=Ratio(0.3, 5.0, 3, "pooled", 6.0), cuts={"cold": 1, "cold:hinted": 0},
                      errors={"naive": "KeyError: 'x'"})
    return ReplayResult([a, b], {"too_short": 2, "unreadable": 1}, files=4, lines=100, bad_lines=5,
                        policies=["off", "cold"], tier=2)


def test_policy_figures_are_priced_on_the_real_bill():
    doc = build_json(result(), "/corpus", "2026-01-01")
    off, cold = doc["policies"]
    assert (doc["real_cost_usd"], doc["sessions_replayed"], doc["requests_replayed"]) == (4.0, 2, 14)
    assert off["name"] == "off" and off["cost_usd"] == 4.0 and off["saving_usd"] == 0.0
    # a: 1.00 + 0.81 - 1.01 = 0.80; b: 3.00 + 3.33 - 3.30 = 3.03 (dearer than its real bill)
    assert (cold["cost_usd"], cold["saving_usd"], cold["saving_pct"]) == (3.83, 0.17, 4.25)
    assert (cold["sessions_worse"], cold["worst_session_pct"], cold["best_session_pct"]) == (1, -1.0, 20.0)
    # the headline is the provable arm ("cold"); the arm told the usage-inferred breaks is apart
    assert (cold["proven_saving_usd"], cold["proven_saving_pct"]) == (0.17, 4.25)
    assert (cold["hinted_saving_usd"], cold["hinted_saving_pct"]) == (0.1, 2.5)  # 0.90 + 3.00
    assert cold["hinted_sessions_worse"] == 0
    assert (cold["cuts"], cold["hinted_cuts"]) == (4, 2)
    assert doc["ceiling"] == {"cost_usd": 3.3, "saving_usd": 0.7, "saving_pct": 17.5}  # 0.60 + 2.70
    assert cold["ceiling_share_pct"] == 24.29  # 0.17 of 0.70


def test_the_check_skips_ratios_and_errors_are_reported():
    doc = build_json(result(), "/corpus", "2026-01-01")
    ch = doc["check"]
    assert (ch["real_cost_usd"], ch["simulated_cost_usd"], ch["error_pct"]) == (4.0, 4.31, 7.75)
    assert ch["within_target"] is False
    assert [r["session"] for r in ch["off_target_sessions"]] == ["bbbb2222/<agent&1>"]  # +10%; a is +1%
    assert doc["skipped"] == {"too_short": 2, "oversized": 0, "unreadable_files": 1, "unreadable_lines": 5,
                              "no_requests": 0, "errors": 0}
    assert doc["tokens_per_byte"] == {"sequences_by_method": {"fit": 1, "pooled": 1},
                                      "fit_error_pct_weighted": 5.0}  # (2.0 x $1 + 6.0 x $3) / $4
    assert doc["policy_errors"] == ["bbbb2222/<agent&1>: naive: KeyError: 'x'"]
    assert (doc["files"], doc["lines"], doc["tier"], doc["baseline"]) == (4, 100, 2, "real")
    assert "sessions" not in doc


def test_sessions_rows_and_a_stable_document():
    doc = build_json(result(), "/corpus", "2026-01-01", sessions=True)
    a, b = doc["sessions"]
    assert a["costs_usd"] == {"ceiling": 0.6, "cold": 0.8, "cold:hinted": 0.9, "off": 1.0}  # on the real bill
    assert (b["check_error_pct"], b["ratio_method"], b["kind"]) == (10.0, "pooled", "subagent")
    assert json.dumps(doc) == json.dumps(build_json(result(), "/corpus", "2026-01-01", sessions=True))


def test_no_negative_zero_in_the_json():
    res = result()
    res.sessions[0].costs["cold"] = 1.01 + 1e-9  # a saving that rounds to zero from below
    res.sessions = res.sessions[:1]
    assert "-0.0" not in json.dumps(build_json(res, "/c", "x"))


def render(doc, sessions=None) -> str:
    console = Console(record=True, width=220, color_system=None)
    render_tables(doc, console, sessions)
    return console.export_text()


def test_tables_show_each_policy_the_ceiling_and_the_check():
    doc = build_json(result(), "/corpus", "2026-01-01", sessions=True)
    out = render(doc, doc["sessions"])
    assert "scalpel bench /corpus  tier 2  prices as of 2026-01-01" in out
    assert "real bill $4.00 (the baseline)" in out
    cold = next(ln for ln in out.splitlines() if ln.startswith("cold "))  # plain columns (textable)
    assert cold.split() == ["cold", "3.830", "0.170", "4.25", "2.50", "1", "-1.0", "20.0", "4"]
    assert "+7.75%, OUTSIDE the 2% target" in out
    assert "  bbbb2222/<agent&1>: +10.0%" in out
    assert "Skipped: too short 2, oversized 0, unreadable files 1, unreadable lines 5, no requests 0, errors 0" in out
    row = next(ln for ln in out.splitlines() if "bbbb2222" in ln and "subagent" in ln)
    assert row.split()[-2:] == ["3.030", "2.700"]  # cold $, ceiling $


def test_tables_print_a_corpus_path_with_brackets_as_it_is():
    """Regression: the path went through rich markup: ``[old]`` vanished, ``[/x]`` raised MarkupError."""
    for corpus in ("/data/[old]/transcripts", "/data/[/x]"):
        res = result()
        res.sessions[1].name = "bbbb2222/[/agent]"
        doc = build_json(res, corpus, "2026-01-01", sessions=True)
        out = render(doc, doc["sessions"])
        assert f"scalpel bench {corpus}  tier 2" in out
        assert "  bbbb2222/[/agent]: +10.0%" in out and "\nbbbb2222/[/agent]  subagent" in out


def test_html_is_escaped_self_contained_and_sorted_by_real_cost():
    doc = build_json(result(), "/corpus <&>", "2026-01-01", sessions=True)
    page = render_html(doc, doc["sessions"])
    assert page.startswith("<!doctype html>") and page.endswith("</html>\n")
    assert "<agent&1>" not in page and "bbbb2222/&lt;agent&amp;1&gt;" in page
    assert "/corpus &lt;&amp;&gt;, tier 2, 2 sequences, 14 requests" in page
    assert page.index("bbbb2222") < page.index("aaaa1111")  # dearest session first
    assert "$3.000 &#8594; $3.030" in page and "$1.000 &#8594; $0.800" in page  # real -> cold
    assert "<td>cold</td><td>3.830</td><td>0.170</td><td>4.25</td><td>2.50</td><td>1</td><td>-1.0</td>" in page
    assert "Ceiling: 17.50% ($0.700)" in page
    assert "$3.000 &#8594; $2.700" in render_html(doc, doc["sessions"], after="ceiling")


@pytest.mark.parametrize("sessions", [[], None])
def test_html_without_sessions_still_renders(sessions):
    doc = build_json(result(), "/c", "x")
    assert "<svg" in render_html(doc, sessions or [])
