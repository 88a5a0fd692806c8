"""The named scripts: what each answers, and the Claude Code session's steps on the work dir."""

from __future__ import annotations

import pytest

from scalpel_desktop.emulator import scripts
from scalpel_desktop.emulator.script import Script


def test_prepare_workdir_writes_the_two_files_with_the_todo(tmp_path):
    root = scripts.prepare_workdir(tmp_path / "a" / "proj")
    assert (root / "notes.txt").read_text() == scripts.NOTES and "TODO: fix the greeting" in scripts.NOTES
    assert (root / "app.py").read_text() == scripts.APP


def test_the_claude_code_session_works_on_absolute_paths_in_the_workdir(tmp_path):
    s = scripts.claude_code_session(tmp_path)
    notes = str(tmp_path.resolve() / "notes.txt")
    calls = [[(c.name, dict(c.input)) for c in t.tool_calls] for t in s.main]
    assert calls[0] == [("Read", {"file_path": notes})]
    assert calls[2] == [("Edit", {"file_path": notes, "old_string": "TODO: fix the greeting",
                                  "new_string": "DONE: fixed the greeting"})]
    assert calls[4] == [("Read", {"file_path": notes})]  # the re-read that supersedes the first
    assert [n for n, _ in calls[5]] == ["Read", "Bash"]  # parallel
    assert calls[6][0][0] == "Agent" and calls[6][0][1]["run_in_background"] is False
    assert s.main[-1].text == scripts.FINAL_TEXT and not s.main[-1].tool_calls
    assert all(t.stop_reason == "tool_use" for t in s.main[:-1])
    assert s.tracks["subagent"][-1].text == scripts.SUBAGENT_TEXT
    assert s.tracks["resume"][-1].text == scripts.RESUME_TEXT
    assert s.detect_side and s.side_text == "OK."


def test_claude_code_2_0_uses_task_without_run_in_background(tmp_path):
    s = scripts.claude_code_session(tmp_path, agent_tool="Task")
    (agent,) = s.main[6].tool_calls
    assert agent.name == "Task" and "run_in_background" not in agent.input


def test_the_small_scripts():
    assert [t.text for t in scripts.text_reply("hi").main] == ["hi"]
    loop = scripts.tool_loop("lookup", turns=3, q="x")
    assert [(c.name, dict(c.input)) for t in loop.main[:3] for c in t.tool_calls] == [("lookup", {"q": "x"})] * 3
    assert loop.main[3].text == "All done." and len(loop.main) == 4
    assert dict(scripts.tool_loop().main[0].tool_calls[0].input) == {"city": "Paris"}
    par = scripts.parallel_tools()
    assert [dict(c.input)["city"] for c in par.main[0].tool_calls] == ["City 0", "City 1"]
    assert [c.name for c in scripts.parallel_tools("a", "b", "c").main[0].tool_calls] == ["a", "b", "c"]


def test_named_script(tmp_path, monkeypatch):
    assert set(scripts.NAMED) == {"default", "text", "claude_code_session", "long_session", "tool_loop", "parallel"}
    assert all(isinstance(scripts.named_script(n), Script) for n in ("default", "text", "tool_loop", "parallel"))
    monkeypatch.chdir(tmp_path)
    s = scripts.named_script("claude_code_session")  # the work dir defaults to the current directory
    assert s.main[0].tool_calls[0].input["file_path"] == str(tmp_path.resolve() / "notes.txt")
    assert scripts.named_script("long_session").main[0].tool_calls[0].input["file_path"] == \
        str(tmp_path.resolve() / scripts.LONG_FILE)
    with pytest.raises(KeyError, match="unknown script 'nope'; known: claude_code_session, default, long_session"):
        scripts.named_script("nope")


def test_the_long_session_reads_one_large_file_edits_it_then_takes_small_steps(tmp_path):
    """Issue 23's live check: the large read dies at the Edit, and many small turns follow it."""
    root = scripts.prepare_long_workdir(tmp_path, kb=20)
    text = (root / scripts.LONG_FILE).read_text()
    assert text.startswith("STATUS: draft\n") and 18_000 < len(text) < 22_000
    s = scripts.long_session(root, turns=4)
    names = [c.name for t in s.main for c in t.tool_calls]
    assert names == ["Read", "Edit", "Bash", "Bash", "Bash", "Bash"]
    assert s.main[1].tool_calls[0].input["old_string"] == "STATUS: draft"
    assert s.main[-1].text == scripts.LONG_TEXT
