"""Region sizes of a request body and the working directory it states (sizes and a path, never content)."""

from __future__ import annotations

from scalpel_desktop.accounting.context_regions import measure, under_home, working_directory
from scalpel_desktop.wire.jsoncodec import dumps


def _doc():
    return {
        "model": "claude-sonnet-4-5",
        "system": [{"type": "text", "text": "You are Claude Code." * 50},
                   {"type": "text", "text": "# Environment\n - Primary working directory: /home/u/work/proj\n"}],
        "tools": [{"name": "Read", "description": "Read a file." * 40, "input_schema": {}},
                  {"name": "mcp__github__create_issue", "description": "Create an issue." * 20, "input_schema": {}}],
        "messages": [
            {"role": "user", "content": "hello"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Read", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x" * 3300}]},
        ],
    }


def test_regions_split_the_body_and_sum_to_its_estimate():
    doc = _doc()
    body = dumps(doc)
    r = measure("messages", doc, len(body))
    assert set(r) == {"system", "tools", "mcp_tools", "messages", "tool_results"}
    assert r["tool_results"] == 1000  # 3,300 characters at 3.3 per token
    assert r["tools"] > r["mcp_tools"] > 0 and r["system"] > 0
    assert abs(sum(r.values()) - len(body) / 3.3) <= 5
    assert measure("count_tokens", doc, len(body)) is None and measure("messages", None, 10) is None


def test_working_directory_is_shown_under_home():
    assert working_directory(_doc(), home="/home/u") == "~/work/proj"
    assert working_directory(_doc(), home="/home/other") == "/home/u/work/proj"
    assert working_directory({"messages": [{"role": "user", "content": "no env"}]}) is None
    assert under_home("/home/u", "/home/u") == "~" and under_home("/home/uu/x", "/home/u") == "/home/uu/x"
