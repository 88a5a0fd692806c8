"""``scalpel tools ...``: the removal list, the inventory and suggestions from the command line."""

from __future__ import annotations

import json

import pytest

from scalpel_desktop.cli import main
from scalpel_desktop.config import Config
from scalpel_desktop.tools.store import Declared, ToolStore
from tests.support import run_cli as run


def test_every_tools_command_has_help(capsys):
    for cmd in ("ls", "suggest", "remove", "restore", "on", "off", "history"):
        with pytest.raises(SystemExit) as e:
            main(["tools", cmd, "--help"])
        assert e.value.code == 0
        assert "usage: scalpel tools " + cmd in capsys.readouterr().out


def test_remove_restore_on_off_and_history(capsys):
    code, out, err = run(capsys, "tools", "remove", "Workflow")
    assert code == 1 and "refusing" in err and "the model loses running multi-step workflow scripts" in err
    assert run(capsys, "tools", "remove", "Workflow", "--force")[0] == 0
    code, _, err = run(capsys, "tools", "remove", "mcp__githb")  # a typo: no session ever declared it
    assert code == 1 and "refusing: mcp__githb is not in the tool inventory" in err and "--force" in err
    ToolStore.open().save_inventory("s0", "claude-cli/2.1.332", "claude-sonnet-4-5", 1_790_000_000.0,
                                    [Declared("mcp__github__create_issue", "mcp", "github", 300)], [], new_request=True)
    code, out, _ = run(capsys, "tools", "remove", "mcp__github")  # seen: one of the server's tools was declared
    assert code == 0 and "added to the removal list" in out and "once the filter is on" in out
    assert "already on" in run(capsys, "tools", "remove", "mcp__github")[1]
    assert run(capsys, "tools", "remove", "bad name!")[0] == 1
    assert run(capsys, "tools", "remove", "mcp__notyet", "--force")[0] == 0  # --force: add it anyway
    assert run(capsys, "tools", "restore", "mcp__notyet")[0] == 0
    assert run(capsys, "tools", "on")[0] == 0
    assert Config.load().get("tool_filter") is True
    assert "taken off" in run(capsys, "tools", "restore", "mcp__github")[1]
    assert "was not on the removal list" in run(capsys, "tools", "restore", "mcp__github")[1]
    assert run(capsys, "tools", "off")[0] == 0
    assert Config.load().get("tool_filter") is False
    code, out, _ = run(capsys, "tools", "history", "--json")
    rows = json.loads(out)
    assert [(r["action"], r["name"], r["source"]) for r in rows] == [
        ("remove", "Workflow", "cli"), ("remove", "mcp__github", "cli"), ("remove", "mcp__notyet", "cli"),
        ("restore", "mcp__notyet", "cli"), ("on", "", "cli"),
        ("restore", "mcp__github", "cli"), ("off", "", "cli")]
    assert rows[0]["detail"] == "forced"
    code, out, _ = run(capsys, "tools", "history")
    assert "restore  mcp__github" in out


def test_ls_and_suggest_output(capsys):
    store = ToolStore.open()
    day = 86400.0
    for i in range(5):
        store.save_inventory(f"s{i}", "claude-cli/2.1.332", "claude-sonnet-4-5", 1_790_000_000 + i * 2 * day,
                             [Declared("Bash", "builtin", None, 900), Declared("LSP", "builtin", None, 470)],
                             [(f"c{i}", "Bash")], new_request=True)
    code, out, _ = run(capsys, "tools", "ls")
    assert code == 0 and "LSP" in out and "sessions with a captured inventory: 5" in out
    data = json.loads(run(capsys, "tools", "ls", "--json")[1])
    assert {t["name"]: t["calls"] for t in data["tools"]} == {"Bash": 5, "LSP": 0}
    code, out, _ = run(capsys, "tools", "suggest")
    assert "LSP" in out and "[projected]" in out and "scalpel tools remove LSP --force" in out
    report = json.loads(run(capsys, "tools", "suggest", "--json")[1])
    assert [s["name"] for s in report["suggestions"]] == ["LSP"]
    assert report["coverage"]["sessions"] == 5
