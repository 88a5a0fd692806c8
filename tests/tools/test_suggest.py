"""Suggestion thresholds on synthetic inventories: 5 sessions, 7 days, no call."""

from __future__ import annotations

from scalpel_desktop.tools.store import Declared, ToolStore
from scalpel_desktop.tools.suggest import build_report

DAY = 86400.0
T0 = 1_790_000_000.0


def seed(store: ToolStore, starts: list[float], *, called: dict[int, str] | None = None, prefix="s",
         tools=("Bash", "Workflow", "mcp__gh__issue", "mcp__gh__pr"), requests=10):
    for i, t in enumerate(starts):
        sid = f"{prefix}{i}"
        decl = [Declared(n, "mcp" if n.startswith("mcp__") else "builtin", "gh" if n.startswith("mcp__") else None,
                         400 + 10 * k, f"{n} summary") for k, n in enumerate(tools)]
        calls = [(f"{sid}-c1", "Bash")]
        if called and i in called:
            calls.append((f"{sid}-c2", called[i]))
        store.save_inventory(sid, "claude-cli/2.1.332", "claude-sonnet-4-5", t, decl, calls, new_request=True)
        for _ in range(requests - 1):
            store.save_inventory(sid, "claude-cli/2.1.332", "claude-sonnet-4-5", t + 60, None, [], new_request=True)


def names(report):
    return [s["name"] for s in report["suggestions"]]


def test_four_sessions_are_withheld(tmp_path):
    store = ToolStore.open(tmp_path / "l.sqlite3")
    seed(store, [T0 + i * 3 * DAY for i in range(4)])
    r = build_report(store)
    assert names(r) == []
    assert r["coverage"]["sessions"] == 4
    withheld = {w["name"]: w["reason"] for w in r["withheld"]["items"]}
    assert withheld["Workflow"] == "declared in 4 session(s); needs 5"
    assert r["withheld"]["count"] == 3  # Workflow, mcp__gh__issue, mcp__gh__pr (Bash was called)


def test_five_sessions_in_one_afternoon_are_withheld(tmp_path):
    store = ToolStore.open(tmp_path / "l.sqlite3")
    seed(store, [T0 + i * 3600 for i in range(5)])
    r = build_report(store)
    assert names(r) == []
    assert "span 0.2 day(s); needs 7" in {w["name"]: w["reason"] for w in r["withheld"]["items"]}["Workflow"]


def test_five_sessions_over_eight_days_are_suggested(tmp_path):
    store = ToolStore.open(tmp_path / "l.sqlite3")
    seed(store, [T0 + i * 2 * DAY for i in range(5)])
    r = build_report(store)
    # The whole MCP server (none of its tools ever called) is one suggestion.
    assert sorted(names(r)) == ["Workflow", "mcp__gh"]
    s = {x["name"]: x for x in r["suggestions"]}
    wf = s["Workflow"]
    assert wf["sessions"] == 5 and wf["days"] == 8.0 and wf["calls"] == 0
    assert wf["tokens"] == 410
    assert wf["projected"]["label"] == "projected"
    assert wf["projected"]["tokens_per_session"] == 410 * 10
    assert wf["needs_force"] and wf["command"] == "scalpel tools remove Workflow --force"
    assert "called in none of them" in wf["basis"] and "5 captured session(s)" in wf["basis"]
    assert s["mcp__gh"]["tokens"] == 420 + 430
    assert r["withheld"]["count"] == 0
    assert r["coverage"] == {**r["coverage"], "sessions": 5, "days": 8.0}


def test_one_call_anywhere_blocks_the_suggestion(tmp_path):
    store = ToolStore.open(tmp_path / "l.sqlite3")
    seed(store, [T0 + i * 2 * DAY for i in range(6)], called={3: "mcp__gh__pr"})
    r = build_report(store)
    # the server is no longer suggested as a whole; its never-called tool still is
    assert sorted(names(r)) == ["Workflow", "mcp__gh__issue"]


def test_already_removed_names_are_not_suggested(tmp_path):
    store = ToolStore.open(tmp_path / "l.sqlite3")
    seed(store, [T0 + i * 2 * DAY for i in range(5)])
    store.add_removal("Workflow", "cli", forced=True)
    store.add_removal("mcp__gh", "cli", forced=False)
    assert names(build_report(store)) == []



TIED_MODELS = """
import json, sys
from scalpel_desktop.tools.store import Declared, ToolStore
from scalpel_desktop.tools.suggest import build_report
store = ToolStore.open(sys.argv[1])
for i in range(6):
    sid, model = f"s{i}", ("claude-opus-4-1", "claude-haiku-4-5", "claude-sonnet-4-5")[i % 3]
    decl = [Declared("Workflow", "builtin", None, 900, "w"), Declared("Bash", "builtin", None, 500, "b")]
    store.save_inventory(sid, "cli", model, 1_790_000_000.0 + i * 2 * 86400, decl, [(sid + "-c", "Bash")],
                         new_request=True)
s = [x for x in build_report(store)["suggestions"] if x["name"] == "Workflow"][0]
print(json.dumps({k: v for k, v in s.items() if k != "generated_at"}, sort_keys=True, default=str))
"""


def test_a_suggestion_does_not_depend_on_hash_order_when_models_tie(tmp_path):
    """Sessions split evenly over models: the pricing model (and so the projected
    dollars) must come out the same whatever PYTHONHASHSEED is."""
    import os
    import subprocess
    import sys

    outs = set()
    for seed_value in ("1", "2", "3", "4", "5"):
        db = tmp_path / f"seed{seed_value}.sqlite3"
        env = dict(os.environ, PYTHONHASHSEED=seed_value)
        done = subprocess.run([sys.executable, "-c", TIED_MODELS, str(db)], capture_output=True, text=True,
                              env=env, timeout=60)
        assert done.returncode == 0, done.stderr[-800:]
        outs.add(done.stdout)
    assert len(outs) == 1
