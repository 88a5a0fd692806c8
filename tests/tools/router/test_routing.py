"""tools/router/routing.py: which tools a session lists, and what a search reveals."""

from __future__ import annotations

from scalpel_desktop.tools.router.routing import (
    META_NAME,
    Router,
    first_sentence,
    meta_tool,
)
from tests.tools.mcp_catalog import TOOLS, tool_dicts


def test_router_state_rules():
    logs: list[str] = []
    r = Router(hint="", max_tools=5, log=logs.append)
    r.set_catalog(tool_dicts()[:4])
    assert [t["name"] for t in r.listing()] == [n for n, _d, _p in TOOLS[:4]]  # fits: no search tool
    r = Router(hint="slack message", max_tools=3, log=logs.append)
    r.set_catalog(tool_dicts())
    names = [t["name"] for t in r.listing()]
    assert "send_slack_message" in names and names[-1] == META_NAME and len(names) == 4
    text, revealed = r.search("email")
    assert revealed and "send_email" in revealed and len(revealed) <= 5
    text, revealed = r.search("send_slack_message")
    assert revealed == [] and "No hidden tool" in text
    # the upstream's catalogue changes: listed tools stay listed
    before = {t["name"] for t in r.listing()}
    r.set_catalog(tool_dicts()[:-1])
    assert before - {META_NAME} <= {t["name"] for t in r.listing()}


def test_recent_calls_come_first_when_there_is_no_hint():
    r = Router(recent=["describe_table", "gone_tool"], max_tools=4)
    r.set_catalog(tool_dicts())
    visible = r.decide()
    assert "describe_table" in visible and "gone_tool" not in visible and len(visible) <= 4
    assert {"list_tables", "run_sql_query"} & visible  # its neighbours, not the whole catalogue


def test_no_hint_and_no_history_lists_everything_without_a_search_tool():
    logs: list[str] = []
    r = Router(max_tools=3, log=logs.append)
    r.set_catalog(tool_dicts())
    assert len(r.listing()) == len(TOOLS) and r.hidden() == []
    assert r.search("email") == ("Every tool of this server is already listed; nothing to reveal.", [])
    assert logs and "full catalogue" in logs[0]


def test_the_upstreams_own_meta_named_tool_and_bad_entries_are_ignored():
    r = Router(max_tools=10)
    r.set_catalog([{"name": META_NAME}, {"name": 3}, "junk", {"name": "ok", "description": "fine"}])
    assert r.names == ["ok"]


def test_a_reveal_is_logged_with_its_cache_cost():
    logs: list[str] = []
    r = Router(hint="slack message", max_tools=3, log=logs.append)
    r.set_catalog(tool_dicts())
    text, revealed = r.search("docker container logs")
    assert "container_logs" in revealed and text.startswith(f"Revealed {len(revealed)} tool(s)")
    assert r.reveals == 1 and "reveal #1" in logs[-1] and "re-writes its whole prompt cache" in logs[-1]


def test_first_sentence_and_meta_tool():
    assert first_sentence("Create an issue. Then more.\nSecond line") == "Create an issue."
    assert first_sentence(None) == ""
    assert len(first_sentence("x" * 500)) == 140
    tool = meta_tool(7)
    assert tool["name"] == META_NAME and "7 tool(s)" in tool["description"]
    assert tool["inputSchema"]["required"] == ["query"]
