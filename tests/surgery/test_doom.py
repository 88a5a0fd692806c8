"""Exact doom cases: each kind, each protection, tier 1 against tier 2."""

from __future__ import annotations

import pytest

from scalpel_desktop.surgery.doom import bash_read, find_doom_spans, is_snapshot_tool
from scalpel_desktop.surgery.testing import SessionBuilder, file_text
from scalpel_desktop.wire.formats import view_for

CWD = "/home/user/proj"
BIG = file_text("/home/user/proj/a.py", 40)  # ~750 tokens
CFG0 = {"keep_recent": 0}


def spans_of(b: SessionBuilder, cfg=None, tier=2):
    v = view_for("messages", b.body())
    return {s.tool_use_id: s for s in find_doom_spans(v, cfg if cfg is not None else CFG0, tier)}


def filler(b: SessionBuilder, n: int) -> None:
    for i in range(n):
        b.call("Glob", {"pattern": f"*.{i}"}, f"x{i}.py")


def test_read_superseded_by_later_edit_and_by_reread():
    b = SessionBuilder(cwd=CWD)
    r1 = b.call("Read", {"file_path": f"{CWD}/a.py"}, BIG)
    e = b.call("Edit", {"file_path": f"{CWD}/a.py", "old_string": "x", "new_string": "y"}, "The file has been updated.")
    r2 = b.call("Read", {"file_path": f"{CWD}/a.py"}, BIG + "more\n")
    r3 = b.call("Read", {"file_path": f"{CWD}/a.py"}, BIG + "more again\n")
    s = spans_of(b)
    assert s[r1].kind == "superseded_read"
    assert s[r1].died_at_unit == 5  # the Edit's result (unit indexes: 0 user, 1 system, 2/3, 4/5)
    assert s[r2].kind == "superseded_read" and s[r2].died_at_unit == 9
    assert r3 not in s and e not in s


@pytest.mark.parametrize("writer,key", [("Write", "file_path"), ("MultiEdit", "file_path"), ("NotebookEdit", "notebook_path")])
def test_every_writer_supersedes(writer, key):
    b = SessionBuilder(cwd=CWD)
    r1 = b.call("Read", {"file_path": f"{CWD}/a.py"}, BIG)
    b.call(writer, {key: f"{CWD}/a.py"}, "ok")
    assert spans_of(b)[r1].kind == "superseded_read"


def test_failed_edit_does_not_supersede():
    b = SessionBuilder(cwd=CWD)
    r1 = b.call("Read", {"file_path": f"{CWD}/a.py"}, BIG)
    b.call("Edit", {"file_path": f"{CWD}/a.py"}, "String to replace not found", True)
    assert r1 not in spans_of(b)


def test_other_file_and_partial_reads():
    b = SessionBuilder(cwd=CWD)
    whole = b.call("Read", {"file_path": f"{CWD}/a.py"}, BIG)
    b.call("Edit", {"file_path": f"{CWD}/b.py"}, "ok")
    part = b.call("Read", {"file_path": f"{CWD}/c.py", "offset": 10, "limit": 50}, BIG + "part")
    b.call("Read", {"file_path": f"{CWD}/c.py", "offset": 100, "limit": 50}, BIG + "x")  # another range
    s = spans_of(b)
    assert whole not in s and part not in s
    b.call("Read", {"file_path": f"{CWD}/c.py"}, BIG + "whole")  # a whole-file read replaces both
    assert spans_of(b)[part].kind == "superseded_read"


def test_relative_and_dotted_paths_are_the_same_file():
    b = SessionBuilder(cwd=CWD)
    r1 = b.call("Read", {"file_path": f"{CWD}/src/../a.py"}, BIG)
    b.call("Write", {"file_path": f"{CWD}/a.py", "content": "x"}, "ok")
    assert r1 in spans_of(b)


def test_bash_reads_only_when_clearly_the_same_file():
    assert bash_read("cat /p/a.py", None) == ("/p/a.py", True)
    assert bash_read("cat a.py", "/p") == ("/p/a.py", True)
    assert bash_read("head -n 20 /p/a.py", None) == ("/p/a.py", False)
    assert bash_read("sed -n '1,40p' /p/a.py", None) == ("/p/a.py", False)
    for cmd in ["cat a.py | grep x", "cat a.py b.py", "cat $F", "cat *.py", "cd x && cat a.py", "cat a.py > b", "cat -n a.py",
                "cat ~/a.py", "sed -i s/x/y/ a.py", "grep x a.py"]:
        assert bash_read(cmd, "/p") is None, cmd
    assert bash_read("cat a.py", None) is None  # relative without a known cwd

    b = SessionBuilder(cwd=CWD)
    cat = b.call("Bash", {"command": "cat a.py"}, BIG)
    b.call("Edit", {"file_path": f"{CWD}/a.py"}, "ok")
    r = b.call("Read", {"file_path": f"{CWD}/b.py"}, BIG + "b")
    b.call("Bash", {"command": f"cat {CWD}/b.py"}, BIG + "new")  # a whole-file cat supersedes the Read
    s = spans_of(b)
    assert s[cat].kind == "superseded_read" and s[r].kind == "superseded_read"


def test_bash_cd_makes_relative_paths_ambiguous():
    b = SessionBuilder(cwd=CWD)
    b.call("Bash", {"command": "cd sub"}, "")
    cat = b.call("Bash", {"command": "cat a.py"}, BIG)
    b.call("Edit", {"file_path": f"{CWD}/a.py"}, "ok")
    assert cat not in spans_of(b)


def test_duplicate_keeps_the_latest():
    b = SessionBuilder(cwd=CWD)
    d1 = b.call("Bash", {"command": "git diff"}, BIG)
    d2 = b.call("Bash", {"command": "git diff"}, BIG)
    d3 = b.call("Grep", {"pattern": "x"}, BIG)
    s = spans_of(b)
    assert s[d1].kind == "duplicate" and s[d1].died_at_unit == 5
    assert s[d2].kind == "duplicate" and s[d2].died_at_unit == 7
    assert d3 not in s


def test_failed_command_old_enough_and_moved_past():
    b = SessionBuilder(cwd=CWD)
    f = b.call("Bash", {"command": "make"}, "Exit code 2\n" + BIG, True)
    assert f not in spans_of(b)  # nothing after it
    b.call("Bash", {"command": "make fix"}, "ok", False)
    assert f not in spans_of(b)  # moved past, but young
    filler(b, 4)  # 10 more messages in all
    s = spans_of(b)
    assert s[f].kind == "failed" and s[f].died_at_unit == 3 + 10
    assert f not in spans_of(b, {"keep_recent": 0, "failed_age_messages": 30})


def test_failed_without_later_success_stays():
    b = SessionBuilder(cwd=CWD)
    f = b.call("Bash", {"command": "make"}, "Exit code 2\n" + BIG, True)
    for i in range(6):
        b.call("Bash", {"command": f"make {i}"}, f"Exit code 2 ({i})", True)
    assert f not in spans_of(b)


def test_dead_snapshot_is_tier_two():
    name = "mcp__playwright__browser_snapshot"
    assert is_snapshot_tool(name) and is_snapshot_tool("take_snapshot") and not is_snapshot_tool("Read")
    b = SessionBuilder(cwd=CWD)
    s1 = b.call(name, {}, BIG)
    click = b.call("mcp__playwright__browser_click", {"ref": "e1"}, BIG + "clicked")
    s2 = b.call(name, {}, BIG + "changed page")
    spans = spans_of(b)
    assert spans[s1].kind == "dead_snapshot" and spans[s1].died_at_unit == 7
    assert s2 not in spans
    assert s1 not in spans_of(b, tier=1)
    # the click's result is an MCP result: protected by default, cuttable when configured
    assert len(spans) == 1
    wide = spans_of(b, {"keep_recent": 0, "cut_mcp_results": True, "stale_age_messages": 1, "stale_min_tokens": 100})
    assert set(wide) == {s1, click}


def test_stale_large_is_tier_two_and_needs_size_and_age():
    b = SessionBuilder(cwd=CWD)
    big = b.call("WebFetch", {"url": "https://example.com"}, BIG * 3)  # ~1,500 tokens
    small = b.call("WebFetch", {"url": "https://example.org"}, BIG)  # ~500 tokens
    filler(b, 9)  # 20 messages after the big one: not yet "more than 20"
    assert big not in spans_of(b)
    filler(b, 1)
    s = spans_of(b)
    assert s[big].kind == "stale_large" and s[big].died_at_unit == 3 + 21
    assert small not in s
    assert big not in spans_of(b, tier=1)
    filler(b, 1)
    assert small in spans_of(b, {"keep_recent": 0, "stale_min_tokens": 300})


def test_protected_tools_whatever_the_tier():
    b = SessionBuilder(cwd=CWD)
    ask = b.call("AskUserQuestion", {"questions": []}, BIG)
    task = b.call("Task", {"prompt": "x"}, [{"type": "text", "text": BIG}])
    agent = b.call("Agent", {"prompt": "x"}, [{"type": "text", "text": BIG}])
    mcp = b.call("mcp__db__query", {"sql": "select 1"}, BIG)
    for _ in range(2):  # every one of them again: duplicates, and stale after the filler
        b.call("AskUserQuestion", {"questions": []}, BIG)
        b.call("Task", {"prompt": "x"}, [{"type": "text", "text": BIG}])
        b.call("Agent", {"prompt": "x"}, [{"type": "text", "text": BIG}])
        b.call("mcp__db__query", {"sql": "select 1"}, BIG)
    filler(b, 12)
    s = spans_of(b, {"keep_recent": 0, "stale_min_tokens": 100})
    assert not {ask, task, agent, mcp} & set(s)
    s = spans_of(b, {"keep_recent": 0, "stale_min_tokens": 100, "cut_mcp_results": True})
    assert mcp in s and not {ask, task, agent} & set(s)


def test_keep_recent_min_tokens_and_not_understood():
    b = SessionBuilder(cwd=CWD)
    reads = [b.call("Read", {"file_path": f"{CWD}/a.py"}, BIG + str(i)) for i in range(5)]
    s = spans_of(b, {"keep_recent": 3})
    assert set(s) == {reads[0], reads[1]}  # reads[2] is dead but among the 3 most recent
    assert set(spans_of(b, {"keep_recent": 0})) == set(reads[:4])
    assert not spans_of(b, {"keep_recent": 0, "min_cut_tokens": 10_000})

    b = SessionBuilder(cwd=CWD)
    tiny = b.call("Read", {"file_path": f"{CWD}/a.py"}, "1\tx = 1\n")
    ref = b.call("ToolSearch", {"query": "x"}, [{"type": "tool_reference", "tool_name": "WebFetch"}, {"type": "text", "text": BIG}])
    doc = b.call("Read", {"file_path": f"{CWD}/p.pdf"}, [{"type": "document", "source": {"data": BIG}}])
    b.call("Read", {"file_path": f"{CWD}/a.py"}, BIG)
    b.call("ToolSearch", {"query": "x"}, [{"type": "tool_reference", "tool_name": "WebFetch"}, {"type": "text", "text": BIG}])
    b.call("Read", {"file_path": f"{CWD}/p.pdf"}, [{"type": "document", "source": {"data": BIG}}])
    s = spans_of(b)
    assert not {tiny, ref, doc} & set(s)


def test_orphan_result_and_already_stubbed_are_left_alone():
    b = SessionBuilder(cwd=CWD)
    r1 = b.call("Read", {"file_path": f"{CWD}/a.py"}, BIG)
    b.call("Read", {"file_path": f"{CWD}/a.py"}, BIG + "x")
    body = b.body()
    # orphan: drop the call, keep the result
    body["messages"][2]["content"] = [body["messages"][2]["content"][0]]
    v = view_for("messages", body)
    assert r1 not in {s.tool_use_id for s in find_doom_spans(v, CFG0, 2)}
    b2 = SessionBuilder(cwd=CWD)
    r = b2.call("Read", {"file_path": f"{CWD}/a.py"}, "[scalpel: superseded read removed (~500 tokens). Original: ~/x ]" + BIG)
    b2.call("Read", {"file_path": f"{CWD}/a.py"}, BIG)
    assert r not in spans_of(b2)


def test_tier_one_kinds_only():
    b = SessionBuilder(cwd=CWD)
    r = b.call("Read", {"file_path": f"{CWD}/a.py"}, BIG * 3)
    b.call("Edit", {"file_path": f"{CWD}/a.py"}, "ok")
    filler(b, 12)
    s1, s2 = spans_of(b, tier=1), spans_of(b, tier=2)
    assert s1[r].kind == "superseded_read" == s2[r].kind  # earliest death wins, whatever the tier
    assert {x.kind for x in s1.values()} <= {"superseded_read", "duplicate", "failed"}


def test_config_object_and_defaults():
    from scalpel_desktop.config import Config

    b = SessionBuilder(cwd=CWD)
    reads = [b.call("Read", {"file_path": f"{CWD}/a.py"}, BIG + str(i)) for i in range(5)]
    v = view_for("messages", b.body())
    got = find_doom_spans(v, Config({}), None)
    assert [s.tool_use_id for s in got] == reads[:2]  # keep_recent 3 by default
    assert [s.tool_use_id for s in find_doom_spans(v, None, 2)] == reads[:2]
