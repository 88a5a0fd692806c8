"""scalpel misses: the JSON shape scripts read, a table that fits 80 columns, and clear errors."""

from __future__ import annotations

import json
import time

import pytest

from scalpel_desktop.cli import main
from scalpel_desktop.paths import dirs
from tests.store.test_misses import write


@pytest.fixture
def ledger():
    now = time.time()
    dirs().database.parent.mkdir(parents=True, exist_ok=True)
    write(dirs().database, [
        (now - 3600, "3f2a1b00-aaaa", "claude-opus-5-5", "messages", 0, "ttl-expired", 16977, 0.0815,
         json.dumps({"gap_s": 540.5, "ttl": "5m"})),
        (now - 60, "3f2a1b00-aaaa", "claude-opus-5-5", "messages", 0, "unexplained", 20672, 0.0992, "{}"),
        (now - 30, "9c9c0000-bbbb", "claude-opus-5-5", "messages", 100, "settings-changed", 9000, 0.04,
         json.dumps({"fields": ["output_config"]})),
        (now - 10 * 86400, "9c9c0000-bbbb", "claude-opus-5-5", "messages", 0, "ttl-expired", 1, 0.5, None),
    ]).close()
    return now


def test_json_holds_the_misses_and_their_totals_by_cause(ledger, capsys):
    assert main(["misses", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert [m["cause"] for m in got["misses"]] == ["ttl-expired", "unexplained", "settings-changed"]  # 7 days
    first = got["misses"][0]
    assert set(first) >= {"session", "ts", "model", "cause", "tokens_rewritten", "cost_usd"}
    assert got["total"]["count"] == 3 and got["total"]["by_cause"]["ttl-expired"]["count"] == 1
    assert abs(got["total"]["cost_usd"] - 0.2207) < 1e-6
    assert main(["misses", "--json", "--session", "3f2a", "--since", "30d"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["session"] == "3f2a1b00-aaaa" and got["total"]["count"] == 2


def test_the_table_fits_80_columns_and_piped_output_stays_whole(ledger):
    from tests.cli.test_tables_fit import in_terminal, piped

    out = in_terminal("misses")
    assert "Cache misses since" in out and "$0.2207" in out
    assert all(len(line) <= 80 for line in out.splitlines()), out
    whole = piped("misses").stdout
    assert "9.0 min pause, 5m cache" in whole and "output_config" in whole and "3f2a1b00" in whole


def test_an_unknown_session_and_a_bad_since_are_clear_errors(ledger, capsys):
    assert main(["misses", "--session", "ffff"]) != 0
    assert "no session 'ffff'" in capsys.readouterr().err
    assert main(["misses", "--since", "yesterday-ish"]) != 0
    assert capsys.readouterr().err


def test_no_ledger_yet_says_so(capsys):
    assert main(["misses"]) == 0
    assert "No cache miss since" in capsys.readouterr().out
    assert main(["misses", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["total"]["count"] == 0
