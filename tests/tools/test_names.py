"""tools/names.py: kinds, MCP servers, and which removal names cover which tools."""

from __future__ import annotations

import pytest

from scalpel_desktop.tools import names as tn


@pytest.mark.parametrize("name, ok", [
    ("Workflow", True), ("mcp__github", True), ("mcp__github__create_issue", True), ("skill__code-review", True),
    ("", False), ("mcp__", False), ("skill__", False), ("two words", False), ("x" * 201, False), ("x" * 200, True),
    ("bad;name", False),
])
def test_valid_removal_name(name, ok):
    assert tn.valid_removal_name(name) is ok


@pytest.mark.parametrize("name, server", [
    ("mcp__github__create_issue", "github"), ("mcp__my-srv__a__b", "my-srv"),
    ("mcp__github", None), ("mcp____tool", None), ("Read", None), ("skill__x", None),
])
def test_mcp_server(name, server):
    assert tn.mcp_server(name) == server


@pytest.mark.parametrize("decl, claude_code, kind", [
    ({"type": "web_search_20250305", "name": "web_search"}, True, "server"),
    ({"type": "custom", "name": "Read"}, True, "builtin"),
    ({"type": "function", "name": "lookup"}, False, "client"),
    ({"name": "mcp__github__create_issue", "defer_loading": True}, True, "mcp"),
    ({"name": "Monitor", "defer_loading": True}, True, "deferred"),
    ({"name": "Monitor", "defer_loading": "yes"}, True, "builtin"),
    ({"name": 7}, False, "client"),
])
def test_declaration_kind(decl, claude_code, kind):
    assert tn.declaration_kind(decl, claude_code=claude_code) == kind


def test_is_claude_code_reads_the_user_agent():
    assert tn.is_claude_code("claude-cli/2.1.332 (external, cli)")
    assert tn.is_claude_code("Mozilla/5.0 claude-code/1.0")
    assert not tn.is_claude_code("Anthropic/Python 0.40.0")
    assert not tn.is_claude_code("")


@pytest.mark.parametrize("removal, tool, covered", [
    ("Workflow", "Workflow", True),
    ("Workflow", "WorkflowRun", False),
    ("mcp__github", "mcp__github__create_issue", True),
    ("mcp__github", "mcp__githubber__x", False),
    ("mcp__github__create_issue", "mcp__github__create_issue_comment", False),
    ("mcp__github", "mcp__github", True),
])
def test_covers(removal, tool, covered):
    assert tn.covers(removal, tool) is covered


def test_skill_removal():
    assert tn.skill_removal("skill__code-review") == "code-review"
    assert tn.skill_removal("skill__") is None
    assert tn.skill_removal("Skill") is None


@pytest.mark.parametrize("name, text, hit", [
    ("Bash", "use the Bash tool", True),
    ("Bash", "Bash.", True),
    ("Bash", "BashOutput is different", False),
    ("Bash", "subBash", False),
    ("bash", "use the Bash tool", False),
    ("", "anything", False),
    ("mcp__a__b", "(mcp__a__b)", True),
])
def test_mentioned_is_a_whole_word_match(name, text, hit):
    assert tn.mentioned(name, text) is hit
