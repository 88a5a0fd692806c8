"""cli/degraded.py: the proxy's degraded items laid out for doctor and status."""

from __future__ import annotations

from scalpel_desktop.cli.degraded import degraded_checks, hanging, print_degraded, today_figure

LEDGER = {"code": "ledger-unreadable", "severity": "fail", "label": "ledger unreadable",
          "reason": "the ledger cannot be read (DatabaseError: file is not a database)", "fix": "move it aside"}
RECORDING = {"code": "recording-off", "severity": "fail", "label": "recording off",
             "reason": "recording is off: the ledger could not be written", "fix": "move it aside"}
WAITS = {"code": "order-waits", "severity": "warn", "label": "order waits", "reason": "2 request(s) waited",
         "fix": "send the log"}


def test_hanging_wraps_under_the_text_on_a_terminal_and_keeps_one_line_in_a_pipe():
    text = "the ledger ~/.local/share/scalpel-desktop/ledger.sqlite3 cannot be read: " * 3
    assert hanging("[FAIL] ledger  ", text, None) == ["[FAIL] ledger  " + text]
    lines = hanging("[FAIL] ledger  ", text, 60)
    assert len(lines) > 1 and all(len(line) <= 60 for line in lines)
    assert all(line.startswith(" " * len("[FAIL] ledger  ")) for line in lines[1:])
    assert " ".join(lines).split() == ("[FAIL] ledger  " + text).split()  # nothing lost, no path cut


def test_today_is_unknown_not_zero_when_the_proxy_could_not_read_the_ledger():
    assert today_figure({"saved_tokens_today": None, "saved_usd_today": None}) == "unknown"
    assert today_figure({"saved_tokens_today": 0, "saved_usd_today": 0.0}) == "0 tokens ($0.00)"
    assert today_figure({"saved_tokens_today": 12345, "saved_usd_today": 0.0512}) == "12,345 tokens ($0.05)"


def test_each_feature_is_a_check_and_a_degraded_one_replaces_its_ok_line():
    healthy = {n: s for n, s, _, _ in degraded_checks({"degraded": [], "recording": True, "tool_filter_active": False,
                                                       "tier": 2, "policy": "death"})}
    assert healthy == {"ledger": "ok", "recording": "ok", "surgery": "ok", "tool filter": "info", "spill": "ok"}
    checks = degraded_checks({"degraded": [LEDGER, RECORDING, WAITS], "recording": False})
    by_name = {name: (status, detail, fix) for name, status, detail, fix in checks}
    assert by_name["ledger"] == ("fail", LEDGER["reason"], "move it aside")
    assert by_name["recording"][0] == "fail" and by_name["order waits"][0] == "warn"
    assert by_name["surgery"][0] == "ok"  # nothing said about surgery: its ok line stays


def test_status_prints_each_item_and_a_shared_fix_once(capsys):
    print_degraded([LEDGER, RECORDING, WAITS], None)
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "  degraded  2 failing, 1 warning(s)"
    assert [line for line in out if line.startswith("  FAIL")] == [f"  FAIL  {LEDGER['reason']}",
                                                                     f"  FAIL  {RECORDING['reason']}"]
    assert sum("fix: move it aside" in line for line in out) == 1  # one cause, one fix
    assert "  warn  2 request(s) waited" in out and any("fix: send the log" in line for line in out)
    print_degraded([], None)
    assert capsys.readouterr().out == ""
    print_degraded([{"code": "surgery-off", "severity": "info", "reason": "paused", "fix": "`scalpel resume`"}], None)
    assert capsys.readouterr().out.splitlines()[0] == "  notes     1 by choice"
