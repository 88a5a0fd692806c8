"""The pure tool filter: what is removed, what is kept anyway, and why."""

from __future__ import annotations

import copy

from scalpel_desktop.tools.filter import filter_request, system_prose
from scalpel_desktop.tools.skills import message_texts, skill_names
from scalpel_desktop.wire.jsoncodec import dumps
from tests.tools.bodies import CC_TOOLS, body, corpus_requests, tool


def names(doc):
    return [t.get("name") for t in doc["tools"]]


def test_removes_pinned_names_and_leaves_input_untouched():
    doc = body([tool(n) for n in CC_TOOLS], turns=2)
    before = dumps(doc)
    r = filter_request(doc, frozenset({"ReportFindings", "Workflow"}))
    assert dumps(doc) == before  # pure: the input is not modified
    assert r.changed and not r.left_alone
    assert names(r.doc) == [n for n in CC_TOOLS if n not in ("ReportFindings", "Workflow")]
    assert {x.name for x in r.removed} == {"ReportFindings", "Workflow"}
    assert r.tokens > 0
    # the messages are the very same objects: nothing else changed
    assert r.doc["messages"] is doc["messages"]


def test_prose_gate_keeps_a_name_the_system_prompt_mentions():
    doc = body([tool(n) for n in CC_TOOLS], system="Use the Workflow tool for long jobs.")
    r = filter_request(doc, frozenset({"ReportFindings", "Workflow"}))
    assert "Workflow" in names(r.doc) and "ReportFindings" not in names(r.doc)
    assert r.kept["Workflow"] == "named in the system prose"


def test_prose_gate_ignores_first_message_snapshot_and_listing():
    # Read and Grep are named in the environment snapshot ("Tools: Read, Grep"), Bash in the first message.
    doc = body([tool(n) for n in ["Bash", "Read", "Edit"]])
    doc["messages"][0]["content"][0]["text"] = "Please use Bash and Read here."
    r = filter_request(doc, frozenset({"Read", "Bash"}))
    assert names(r.doc) == ["Edit"]
    assert "Read" not in system_prose(doc) and "Bash" not in system_prose(doc)


def test_prose_gate_reads_later_system_messages():
    extra = [{"role": "system", "content": [{"type": "text", "text": "Reminder: ReportFindings is required at the end."}]}]
    doc = body([tool(n) for n in CC_TOOLS], turns=1, extra_messages=extra)
    r = filter_request(doc, frozenset({"ReportFindings"}))
    assert not r.changed and r.kept == {"ReportFindings": "named in the system prose"}


def test_prose_gate_is_whole_word():
    doc = body([tool("Read"), tool("Bash")], system="Prefer ReadMe files; read carefully.")
    r = filter_request(doc, frozenset({"Read"}))
    assert names(r.doc) == ["Bash"]


def test_tool_choice_forced_tool_is_kept():
    doc = body([tool(n) for n in CC_TOOLS], tool_choice={"type": "tool", "name": "Workflow"})
    r = filter_request(doc, frozenset({"Workflow", "ReportFindings"}))
    assert "Workflow" in names(r.doc) and r.kept["Workflow"] == "forced by tool_choice"
    assert "ReportFindings" not in names(r.doc)


def test_server_side_tools_are_never_removed():
    ws = {"type": "web_search_20250305", "name": "web_search", "max_uses": 3}
    doc = body([tool("Bash"), ws, tool("Read")])
    r = filter_request(doc, frozenset({"web_search", "Read"}))
    assert names(r.doc) == ["Bash", "web_search"]
    assert r.kept["web_search"] == "server-side tool"


def test_last_remaining_tool_is_kept():
    doc = body([tool("Bash"), tool("Read")])
    r = filter_request(doc, frozenset({"Bash", "Read"}))
    assert names(r.doc) == ["Read"]  # the last declared one stays
    assert r.kept == {"Read": "last remaining tool"}
    # deferred tools do not count as remaining
    doc = body([tool("Bash"), tool("WebFetch", defer_loading=True)])
    r = filter_request(doc, frozenset({"Bash"}))
    assert not r.changed and r.kept == {"Bash": "last remaining tool"}


def test_pending_call_to_a_removed_name_leaves_the_body_alone():
    doc = body([tool(n) for n in CC_TOOLS], turns=3, calls=["Bash", "Read", "Workflow"])
    r = filter_request(doc, frozenset({"Workflow", "ReportFindings"}))
    assert not r.changed and r.doc is doc
    assert r.left_alone == "last turn calls Workflow"
    # the same call earlier in the history (not the last turn) does not stop the filter
    doc = body([tool(n) for n in CC_TOOLS], turns=4, calls=["Bash", "Read", "Workflow", "Bash"])
    r = filter_request(doc, frozenset({"Workflow", "ReportFindings"}))
    assert r.changed and "Workflow" not in names(r.doc)


def test_tool_reference_anywhere_in_history_keeps_the_name():
    ref = [{"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_ts", "name": "ToolSearch",
                                              "input": {"query": "select:WebFetch"}}]},
           {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_ts",
                                         "content": [{"type": "tool_reference", "tool_name": "WebFetch"}]},
                                        {"type": "text", "text": "Tool loaded."}]},
           {"role": "assistant", "content": [{"type": "text", "text": "done"}]},
           {"role": "user", "content": "thanks"}]
    tools = [tool(n) for n in CC_TOOLS] + [tool("WebFetch", defer_loading=True)]
    doc = body(tools, turns=1, extra_messages=ref)
    r = filter_request(doc, frozenset({"WebFetch", "ReportFindings"}))
    assert "WebFetch" in names(r.doc) and r.kept["WebFetch"] == "referenced by a tool_reference block"
    assert "ReportFindings" not in names(r.doc)


def test_mcp_server_name_removes_the_whole_server():
    tools = [tool("Bash"), tool("mcp__github__create_issue"), tool("mcp__github__list_prs"),
             tool("mcp__githubx__other"), tool("mcp__slack__post")]
    doc = body(tools)
    r = filter_request(doc, frozenset({"mcp__github"}))
    assert names(r.doc) == ["Bash", "mcp__githubx__other", "mcp__slack__post"]
    r = filter_request(doc, frozenset({"mcp__slack__post"}))
    assert "mcp__slack__post" not in names(r.doc) and len(names(r.doc)) == 4


def test_skill_name_removes_its_listing_entry_only():
    for as_list in (False, True):
        doc = body([tool(n) for n in CC_TOOLS], listing_as_list=as_list, turns=1)
        r = filter_request(doc, frozenset({"skill__claude-api"}))
        assert r.changed and names(r.doc) == CC_TOOLS
        text = message_texts(r.doc["messages"][1])[0]
        assert skill_names(text) == ["dataviz", "code-review"]
        assert "TRIGGER" not in text and "Today's date is 2026-11-29." in text
        assert [x.name for x in r.removed] == ["skill__claude-api"]
        # the original listing message is untouched
        assert "claude-api" in message_texts(doc["messages"][1])[0]
        # other messages are shared, not copied
        assert r.doc["messages"][2] is doc["messages"][2]


def test_skill_named_in_prose_is_kept():
    doc = body([tool(n) for n in CC_TOOLS], system="Always run the code-review skill before finishing.")
    r = filter_request(doc, frozenset({"skill__code-review", "skill__dataviz"}))
    assert r.kept == {"skill__code-review": "named in the system prose"}
    assert skill_names(message_texts(r.doc["messages"][1])[0]) == ["claude-api", "code-review"]


def test_pending_skill_call_leaves_the_body_alone():
    doc = body([tool(n) for n in CC_TOOLS])
    doc["messages"] += [
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_s", "name": "Skill", "input": {"skill": "dataviz"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_s", "content": "loaded"}]}]
    r = filter_request(doc, frozenset({"skill__dataviz"}))
    assert not r.changed and r.left_alone == "last turn calls skill__dataviz"


def test_unexpected_shapes_are_left_alone():
    assert filter_request([], frozenset({"X"})).left_alone
    doc = body([tool("Bash"), "oops"])
    assert filter_request(doc, frozenset({"Bash"})).left_alone
    doc = body([tool("Bash"), tool("Bash"), tool("Read")])
    assert filter_request(doc, frozenset({"Read"})).left_alone


def test_real_claude_code_2_1_332_bodies():
    reqs = corpus_requests("2.1.332")
    pinned = frozenset({"ReportFindings", "Workflow", "skill__init"})
    for r in reqs:
        doc = r["body"]
        original = copy.deepcopy(doc)
        res = filter_request(doc, pinned)
        assert doc == original
        declared = names(doc)
        sent = names(res.doc)
        assert "ReportFindings" not in sent
        if "Workflow" in declared:
            assert "Workflow" not in sent
        assert [n for n in declared if n not in ("ReportFindings", "Workflow")] == sent
        # exactly the removed declarations are gone: everything else byte for byte
        assert len(dumps(doc)) - len(dumps(res.doc)) == sum(x.bytes for x in res.removed)
