"""``scalpel log``: the surgery log from the ledger, newest first (only what stays true while its table
changes: the JSON fields, the order, --limit, session prefixes, the summary line and the errors)."""

from __future__ import annotations

import json

import pytest

from scalpel_desktop.cli import main
from scalpel_desktop.store import db
from scalpel_desktop.store.cutlog import CutLog, CutRecord
from scalpel_desktop.store.spill import SpillStore
from tests.support import run_cli as run

KEPT = b"the original Read result, still on disk"


@pytest.fixture
def logged():
    """Three cuts in two sessions sharing the prefix ``abc``; one original still in the spill dir."""
    kept = SpillStore().put(KEPT)
    gone = "f" * 64
    recs = [CutRecord("toolu_a", "abc111-session", "", 1000.0, "superseded_read", 1200, kept, 1, "0" * 64),
            CutRecord("toolu_b", "abc111-session", "", 3000.0, "duplicate", 4500, gone, 1, "0" * 64),
            CutRecord("toolu_c", "abc222-session", "a1", 2000.0, "failed", 300, gone, 1, "0" * 64)]
    conn = db.connect()
    CutLog(conn).record(recs)
    conn.close()
    return kept


def test_json_rows_newest_first_with_their_spill_file(logged, capsys):
    code, out, _ = run(capsys, "log", "--json")
    assert code == 0
    rows = json.loads(out)
    assert [r["tool_use_id"] for r in rows] == ["toolu_b", "toolu_c", "toolu_a"]
    a = rows[-1]
    assert {k: a[k] for k in ("session", "agent", "kind", "tokens", "original_sha256", "created_at")} == {
        "session": "abc111-session", "agent": "", "kind": "superseded_read", "tokens": 1200,
        "original_sha256": logged, "created_at": 1000.0}
    assert a["spill_exists"] is True and a["spill_path"].endswith(logged)
    assert rows[0]["spill_exists"] is False  # the duplicate's original is gone from the spill dir
    assert rows[1]["agent"] == "a1"


def test_limit_session_and_unique_prefix(logged, capsys):
    rows = json.loads(run(capsys, "log", "--json", "--limit", "2")[1])
    assert [r["tool_use_id"] for r in rows] == ["toolu_b", "toolu_c"]
    rows = json.loads(run(capsys, "log", "abc111-session", "--json")[1])
    assert [r["tool_use_id"] for r in rows] == ["toolu_b", "toolu_a"]
    rows = json.loads(run(capsys, "log", "abc2", "--json")[1])
    assert [r["tool_use_id"] for r in rows] == ["toolu_c"]


def test_text_summary_counts_the_cuts_and_tokens_shown(logged, capsys):
    code, out, _ = run(capsys, "log")
    assert code == 0 and "3 cuts, ~6,000 tokens removed." in out
    code, out, _ = run(capsys, "log", "abc111", "--limit", "1")
    assert code == 0 and "1 cuts, ~4,500 tokens removed." in out


def test_an_ambiguous_prefix_is_an_error(logged, capsys):
    code, out, err = run(capsys, "log", "abc")
    assert code == 1 and out == ""
    assert err.startswith("scalpel: ") and "session prefix 'abc' is ambiguous" in err


def test_a_limit_under_one_is_refused(capsys):
    code, out, err = run(capsys, "log", "--limit", "0")
    assert (code, out) == (1, "") and "--limit must be at least 1" in err
    with pytest.raises(SystemExit) as e:
        main(["log", "--limit", "many"])
    assert e.value.code == 2 and "invalid int value: 'many'" in capsys.readouterr().err


def test_no_ledger_yet(capsys):
    assert run(capsys, "log") == (0, "No cuts recorded yet.\n", "")
    assert run(capsys, "log", "--json") == (0, "[]\n", "")


def test_a_warm_cut_shows_how_its_bet_did_realized_against_estimated(capsys):
    # The ledger row of the request that made the warm cut holds its stake and estimate; the rows after
    # it, up to the next cold break, are what it really earned on (store/budget_ledger.bets).
    from scalpel_desktop.paths import dirs
    from scalpel_desktop.store.ledger import LedgerWriter

    conn = db.connect()
    CutLog(conn).record([CutRecord("toolu_w", "warm-session", "", 100.5, "superseded_read", 5000, "e" * 64, 1,
                                   "0" * 64)])
    conn.close()
    figures = json.dumps({"boundary": "pinned", "read_stops_at": 33, "payback_x": 2.5, "turns_est": 6,
                          "extra_usd": 0.01, "payback_usd": 0.025, "break_reason": "append"})
    w = LedgerWriter(dirs().database)
    rows = [{"ts": 100.0, "decision": "cut", "reason": "at death: 4980 warm tokens", "figures": figures,
             "staked_usd": 0.01}] + [{"ts": 100.0 + 10 * i, "figures": json.dumps({"break_reason": "append"})}
                                     for i in range(1, 4)]
    for r in rows:
        assert w.submit({"session": "warm-session", "endpoint": "messages", "status": 200, **r})
    assert w.flush(30)
    w.close()
    code, out, _ = run(capsys, "log", "--json")
    row = json.loads(out)[0]
    assert code == 0 and (row["turns_est"], row["turns_earned"], row["bet_closed"]) == (6, 3, False)
    code, out, _ = run(capsys, "log")
    assert "repays 2.5x over 6 turns (earned on 3 of them so far)" in " ".join(out.split())
