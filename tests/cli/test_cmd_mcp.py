"""``scalpel mcp -- COMMAND``: the router's settings (flag, $SCALPEL_MCP_HINT, config) and its errors.

The whole MCP session between the official SDK's client and server is tests/tools/router/test_stdio.py;
here the command is driven with raw JSON-RPC lines and a real upstream (tests/tools/mcp_test_server.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from scalpel_desktop.paths import dirs
from tests.support import REPO, run_cli as run

SERVER = str(REPO / "tests" / "tools" / "mcp_test_server.py")
SESSION = [
    {"jsonrpc": "2.0", "id": 1, "method": "initialize",
     "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
]
GITHUB = ["create_issue", "list_issues", "comment_on_issue", "close_issue"]


def listed(*args: str, hint_env: str | None = None) -> list[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    env.pop("SCALPEL_MCP_HINT", None)
    if hint_env is not None:
        env["SCALPEL_MCP_HINT"] = hint_env
    cp = subprocess.run([sys.executable, "-m", "scalpel_desktop", "mcp", "--quiet", *args, "--", sys.executable, SERVER],
                        input="".join(json.dumps(m) + "\n" for m in SESSION), capture_output=True, text=True,
                        timeout=60, env=env, cwd=REPO)
    assert cp.returncode == 0, cp.stderr
    answer = next(m for m in map(json.loads, cp.stdout.splitlines()) if m.get("id") == 2)
    return [t["name"] for t in answer["result"]["tools"]]


def set_config(**values):
    dirs().config.mkdir(parents=True, exist_ok=True)
    dirs().config_file.write_text(json.dumps(values))


def test_the_configured_hint_and_tool_count_are_the_defaults():
    set_config(mcp_max_tools=4, mcp_hint="github issues")
    assert listed() == GITHUB + ["scalpel_search_tools"]


def test_the_flag_beats_the_environment_which_beats_the_config():
    set_config(mcp_max_tools=4, mcp_hint="github issues")
    assert listed(hint_env="weather forecast") == ["get_weather", "scalpel_search_tools"]
    assert listed("--hint", "github issues", hint_env="weather forecast") == GITHUB + ["scalpel_search_tools"]
    two = listed("--max-tools", "2")
    assert len(two) == 3 and set(two[:2]) <= set(GITHUB) and two[2] == "scalpel_search_tools"


@pytest.mark.parametrize(("argv", "message"), [
    (["mcp"], "give the upstream MCP server's command after `--`"),
    (["mcp", "--"], "give the upstream MCP server's command after `--`"),
    (["mcp", "--max-tools", "0", "--", "server"], "--max-tools must be at least 1"),
    (["mcp", "--quiet", "--", "/nonexistent/mcp-server"], "cannot start the upstream MCP server"),
])
def test_errors_exit_1_with_what_to_do(capsys, argv, message):
    code, out, err = run(capsys, *argv)
    assert code == 1 and out == ""
    assert err.startswith("scalpel: ") and message in err


def test_a_bad_config_file_is_named(capsys):
    dirs().config.mkdir(parents=True, exist_ok=True)
    dirs().config_file.write_text("{oops")
    code, _, err = run(capsys, "mcp", "--", "server")
    assert code == 1 and f"{dirs().config_file}: cannot be read as JSON" in err
