"""The MCP router between a REAL MCP client and a REAL MCP server (official ``mcp`` SDK)."""

from __future__ import annotations

import asyncio
import os
import sys

import mcp_types as types
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from scalpel_desktop.paths import dirs
from scalpel_desktop.tools.router.routing import META_NAME
from tests.support import REPO
from tests.tools.mcp_catalog import TOOLS

SERVER = str(REPO / "tests" / "tools" / "mcp_test_server.py")


def router_params(*router_args: str) -> StdioServerParameters:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return StdioServerParameters(command=sys.executable,
                                 args=["-m", "scalpel_desktop", "mcp", *router_args, "--", sys.executable, SERVER],
                                 env=env, cwd=str(REPO))


def text_of(result) -> str:
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


async def session_flow():
    notes: list = []

    async def on_message(message) -> None:
        notes.append(message)

    async with stdio_client(router_params("--hint", "github issues and pull requests", "--max-tools", "10")) as (r, w):
        async with ClientSession(r, w, message_handler=on_message) as s:
            init = await s.initialize()
            out = {"init": init}
            first = await s.list_tools()
            again = await s.list_tools()
            out["first"], out["again"] = [t.name for t in first.tools], [t.name for t in again.tools]
            out["hidden_call"] = text_of(await s.call_tool("get_weather", {"city": "Paris"}))
            out["search"] = text_of(await s.call_tool(META_NAME, {"query": "docker container logs"}))
            for _ in range(50):
                if notes:
                    break
                await asyncio.sleep(0.05)
            out["notes"] = list(notes)
            out["after"] = [t.name for t in (await s.list_tools()).tools]
            out["low"] = text_of(await s.call_tool(META_NAME, {"query": "zzzz qqqq"}))
            await asyncio.sleep(0.2)
            out["notes2"] = list(notes)
            out["full"] = [t.name for t in (await s.list_tools()).tools]
            out["visible_call"] = text_of(await s.call_tool("create_issue", {"repo": "a/b", "title": "t"}))
    return out


def test_router_between_real_sdk_client_and_server():
    out = asyncio.run(asyncio.wait_for(session_flow(), 60))
    caps = out["init"].capabilities
    assert caps.tools is not None and caps.tools.list_changed is True
    first = out["first"]
    assert 5 <= len(first) <= 11 and first[-1] == META_NAME  # at most 10 tools + the search tool
    assert {"create_issue", "list_issues", "create_pull_request", "merge_pull_request"} <= set(first)
    assert "get_weather" not in first and "container_logs" not in first
    assert out["again"] == first  # stable: the client's cache stays valid
    order = [n for n, _d, _p in TOOLS]
    assert [n for n in first[:-1]] == sorted(first[:-1], key=order.index)  # upstream order kept
    # a hidden tool is relayed all the same
    assert out["hidden_call"] == 'called get_weather with {"city": "Paris"}'
    # search reveals, then list_changed, then the list holds the revealed tools (and everything before)
    assert "container_logs" in out["search"]
    assert any(isinstance(n, types.ToolListChangedNotification) for n in out["notes"])
    assert set(first) <= set(out["after"]) and "container_logs" in out["after"]
    assert len(out["after"]) <= len(first) + 5
    # a low-signal query reveals the full catalogue; the search tool then disappears
    assert "Revealed" in out["low"]
    assert sorted(out["full"]) == sorted(order)
    assert sum(isinstance(n, types.ToolListChangedNotification) for n in out["notes2"]) == 2
    assert out["visible_call"].startswith("called create_issue")
    log = (dirs().logs / "mcp-router.log").read_text(encoding="utf-8")
    assert f"routing: listing {len(first) - 1} of 45 tools + the search tool" in log and "tokens saved per request" in log
    assert "reveal #1: +" in log and "re-writes its whole prompt cache" in log
    assert "reveal #2" in log and "low-signal query" in log


def test_recent_calls_feed_the_next_session():
    async def call_then_list():
        async with stdio_client(router_params("--max-tools", "8")) as (r, w):
            async with ClientSession(r, w) as s:
                await s.initialize()
                no_hint = [t.name for t in (await s.list_tools()).tools]
                await s.call_tool("describe_table", {"table": "users"})
        async with stdio_client(router_params("--max-tools", "8")) as (r, w):
            async with ClientSession(r, w) as s:
                await s.initialize()
                return no_hint, [t.name for t in (await s.list_tools()).tools]

    no_hint, informed = asyncio.run(asyncio.wait_for(call_then_list(), 60))
    assert len(no_hint) == 45 and META_NAME not in no_hint  # no hint, no history: full catalogue
    assert "describe_table" in informed and informed[-1] == META_NAME and len(informed) <= 9
    assert {"list_tables", "run_sql_query"} & set(informed)  # its neighbours by TF-IDF
