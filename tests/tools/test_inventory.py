"""The inventory: declarations (with kinds and sizes), skills, calls; from real bodies too."""

from __future__ import annotations

from scalpel_desktop.exchange import ResponseResult
from scalpel_desktop.pipeline.chain import Chain
from scalpel_desktop.pipeline.identify import Identify
from scalpel_desktop.tools.inventory_stage import InventoryStage
from scalpel_desktop.tools.inventory import calls_in, declared_items, summary_of
from scalpel_desktop.tools.store import ToolStore
from scalpel_desktop.wire.jsoncodec import dumps
from tests.tools.bodies import body, corpus_requests, request, tool


def test_kinds_servers_and_skills():
    tools = [tool("Bash"), tool("mcp__github__create_issue"), tool("WebFetch", defer_loading=True),
             {"type": "web_search_20250305", "name": "web_search"}]
    items = {d.name: d for d in declared_items(body(tools), "claude-cli/2.1.332 (external, sdk-cli)")}
    assert items["Bash"].kind == "builtin"
    assert (items["mcp__github__create_issue"].kind, items["mcp__github__create_issue"].server) == ("mcp", "github")
    assert items["WebFetch"].kind == "deferred"
    assert items["web_search"].kind == "server"
    assert {n for n, d in items.items() if d.kind == "skill"} == {"skill__dataviz", "skill__claude-api", "skill__code-review"}
    assert items["skill__claude-api"].summary == "Reference for the Claude API."
    assert all(d.tokens > 0 for d in items.values())
    other = {d.name: d.kind for d in declared_items(body([tool("lookup")], skills=False), "python-httpx/0.27")}
    assert other == {"lookup": "client"}
    assert declared_items(body([], skills=False), "x") is None


def test_calls_include_skill_invocations():
    doc = body([tool("Bash"), tool("Skill")], turns=2, calls=["Bash", "Read"])
    doc["messages"].append({"role": "assistant", "content": [
        {"type": "tool_use", "id": "toolu_sk", "name": "Skill", "input": {"skill": "dataviz"}}]})
    assert [n for _i, n in calls_in(doc["messages"])] == ["Bash", "Read", "Skill", "skill__dataviz"]


def test_summary_is_the_first_sentence():
    assert summary_of("Reads a file. Then more.") == "Reads a file."
    assert summary_of("Line one\nline two") == "Line one"
    assert summary_of(None) == ""


def test_stage_records_real_claude_code_sessions(tmp_path):
    store = ToolStore.open(tmp_path / "l.sqlite3")
    stage = InventoryStage(store)
    chain = Chain([Identify(), stage])
    reqs = corpus_requests("2.1.332")
    for r in reqs:
        ex = chain.process(request(None, raw=dumps(r["body"]), session=r["headers"].get("x-claude-code-session-id"),
                                   agent=r["headers"].get("x-claude-code-agent-id") or ""))
        chain.complete(ex, ResponseResult(200, None, 1.0, 1.0, 0.0))  # recorded after the answer
    stage.writer.flush()
    (sess,) = store.query("SELECT session, requests FROM tool_sessions")
    assert sess[1] == len(reqs)
    kinds = dict(store.query("SELECT name, kind FROM tool_declarations"))
    assert kinds["Workflow"] == "builtin" and kinds["ReportFindings"] == "builtin"
    assert kinds["WebFetch"] == "deferred" and kinds["skill__init"] == "skill"
    calls = dict(store.query("SELECT name, COUNT(*) FROM tool_calls GROUP BY name"))
    # every tool_use id of the corpus once, however often the history was re-sent
    ids = set()
    for r in reqs:
        for m in r["body"]["messages"]:
            if isinstance(m.get("content"), list):
                ids |= {(b["id"], b["name"]) for b in m["content"] if b.get("type") == "tool_use"}
    expected: dict[str, int] = {}
    for _i, n in ids:
        expected[n] = expected.get(n, 0) + 1
    assert {k: v for k, v in calls.items() if not k.startswith("skill__")} == expected
    assert "Workflow" not in calls and "ReportFindings" not in calls


def test_call_targets_name_the_file_under_home(isolated_home):
    from scalpel_desktop.tools.inventory import call_targets

    msgs = [{"role": "assistant", "content": [
        {"type": "tool_use", "id": "a", "name": "Read", "input": {"file_path": f"{isolated_home}/p/x.py"}},
        {"type": "tool_use", "id": "b", "name": "Bash", "input": {"command": "ls"}},
        {"type": "tool_use", "id": "c", "name": "Grep", "input": {"pattern": "x", "path": "/etc"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "file_path: /nope"}]}]
    assert call_targets(msgs) == {"a": "~/p/x.py", "c": "/etc"}
    assert call_targets(msgs, start=1) == {}
