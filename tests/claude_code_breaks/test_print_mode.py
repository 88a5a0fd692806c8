"""Claude Code 2.1.332 in print mode (``claude -p``, ``--continue``, ``--resume``): what each
behaviour does to the history it re-sends, what scalpel's economist makes of it (from the
ledger rows the proxy wrote) and where the emulator's cache read stops.

The facts are the catalogue in docs/claude-code-breaks.md: a release that changes any of
them fails here.
"""

from __future__ import annotations

import datetime as dt
import json
import sys
from pathlib import Path

import pytest

from scalpel_desktop.emulator.script import call, say
from tests.claude_code_breaks.conftest import assert_append

pytestmark = pytest.mark.claude_cli

MCP_SERVER = Path(__file__).resolve().parents[1] / "tools" / "mcp_test_server.py"
COMPACTED = "This session is being continued from a previous conversation"


def _text(body_msg) -> str:
    c = body_msg.get("content")
    return c if isinstance(c, str) else json.dumps(c, ensure_ascii=False)


def _after_compaction(live):
    """(the last request before the compaction, the first one after it) with their steps."""
    steps, main = live.steps(), live.main()
    k = next(i for i, r in enumerate(main) if _text(r.json()["messages"][0]).startswith(COMPACTED))
    return steps[k - 1], steps[k], main[k].json()


def _assert_compaction_facts(before, after, body) -> None:
    # Bytes: the billing header's cc_version fingerprint (system[0]) changes, and the
    # history restarts at message 0 with the summary; the environment message is empty.
    assert after.diff.region == "system" and after.diff.index == 0 and "cc_version" in after.diff.detail, str(after)
    assert after.msg_diff.index == 0, str(after)
    # The environment message: role "system", empty or only the date (and 2.1.332 puts an
    # output_config key on it).
    env = body["messages"][1]
    assert env["role"] == "system" and (env["content"] == [] or env["content"].startswith("Today's date is")), env
    # The economist: break at 0, system changed. The emulator: nothing read.
    assert (after.brk, after.reason) == (0, "system-changed"), str(after)
    assert after.read.region == "none", str(after)


def test_slash_compact_rewrites_from_the_system_prompt(live):
    live.run("Read a.txt please.")
    live.run("/compact", continue_=True)
    live.run("And now?", continue_=True)
    before, after, body = _after_compaction(live)
    _assert_compaction_facts(before, after, body)


def test_auto_compaction_rewrites_from_the_system_prompt(live):
    # A window of 100k (Claude Code's minimum) at 20%: a 20k threshold, crossed by one big
    # Read, and no longer once the history is a summary.
    big = live.workdir / "big.txt"
    big.write_text("".join(f"line {i}: the greeting module prints a friendly message.\n" for i in range(1400)))
    live.script.tracks["big"] = [call("Read", file_path=str(big)), say("read big")]
    env = {"CLAUDE_CODE_AUTO_COMPACT_WINDOW": "100000", "CLAUDE_AUTOCOMPACT_PCT_OVERRIDE": "20"}
    live.run("SCRIPT:big Read big.txt please.", env_extra=env)
    live.run("And now?", continue_=True, env_extra=env)
    before, after, body = _after_compaction(live)
    _assert_compaction_facts(before, after, body)
    summaries = [r for r in live.emu.received if r.track == "compact"]
    assert len(summaries) == 1, "one compaction"


def _other_day_zone() -> str:
    """An IANA zone whose date differs from UTC's right now (bun reads ICU's zone data:
    POSIX TZ strings and custom zoneinfo files are ignored)."""
    now = dt.datetime.now(dt.timezone.utc)
    return "Pacific/Kiritimati" if (now + dt.timedelta(hours=14)).date() != now.date() else "Etc/GMT+12"


def test_next_day_continue_keeps_the_old_date_and_appends(live):
    live.run("Read a.txt please.", env_extra={"TZ": "UTC"})
    live.run("And now?", continue_=True, env_extra={"TZ": _other_day_zone()})
    steps, main = live.steps(), live.main()
    today = dt.datetime.now(dt.timezone.utc).date().isoformat()
    # The environment message keeps the first run's date: history is not re-rendered.
    assert all(f"Today's date is {today}" in _text(r.json()["messages"][1]) for r in main)
    assert_append(steps[-1], steps[-2])


def _mcp_config(path: Path, names: list[str]) -> str:
    cfg = {"mcpServers": {n: {"type": "stdio", "command": sys.executable, "args": [str(MCP_SERVER)]} for n in names}}
    path.write_text(json.dumps(cfg))
    return str(path)


def test_mcp_server_connecting_and_disconnecting_appends(live, tmp_path):
    pytest.importorskip("mcp")
    live.run("Read a.txt please.", extra_args=["--mcp-config", _mcp_config(tmp_path / "one.json", ["cat"])])
    live.run("And now?", continue_=True, extra_args=["--mcp-config", _mcp_config(tmp_path / "two.json", ["cat", "dog"])])
    live.run("Once more?", continue_=True)  # both servers gone
    steps, main = live.steps(), live.main()
    bodies = [r.json() for r in main]
    # MCP tools are deferred behind ToolSearch: the tools array never changes...
    assert len({json.dumps(b["tools"]) for b in bodies}) == 1
    # ...their arrival and departure are system messages appended to the history.
    assert "mcp__dog__" in _text(bodies[-2]["messages"][-1]) and "now available" in _text(bodies[-2]["messages"][-1])
    assert "no longer available" in _text(bodies[-1]["messages"][-1])
    assert_append(steps[-2], steps[-3])
    assert_append(steps[-1], steps[-2])


def test_claude_md_change_is_appended_to_the_next_prompt(live):
    (live.workdir / "CLAUDE.md").write_text("Rule one: be brief.\n")
    live.run("Read a.txt please.")
    (live.workdir / "CLAUDE.md").write_text("Rule one: be brief.\nRule two: be kind.\n")
    live.run("And now?", continue_=True)
    steps, main = live.steps(), live.main()
    last = main[-1].json()["messages"][-1]
    assert last["role"] == "user" and "Rule two: be kind." in _text(last) and "re-read" in _text(last)
    assert_append(steps[-1], steps[-2])


def test_new_skill_is_an_appended_system_message(live):
    live.run("Read a.txt please.")
    skill = live.workdir / ".claude" / "skills" / "greeter"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: greeter\ndescription: Greets people warmly.\n---\nSay hello.\n")
    live.run("And now?", continue_=True)
    steps, main = live.steps(), live.main()
    last = main[-1].json()["messages"][-1]
    assert last["role"] == "system" and "greeter: Greets people warmly." in _text(last)
    assert_append(steps[-1], steps[-2])


def test_background_task_notification_is_appended(live):
    live.script.tracks["bg"] = [call("Bash", command="sleep 1; echo bg-finished", description="background",
                                     run_in_background=True), say("started it")]
    live.run("SCRIPT:bg start it")  # print mode waits for the task and answers its notification
    steps, main = live.steps(), live.main()
    note = main[-1].json()["messages"][-1]
    assert note["role"] == "user" and "task-notification" in _text(note), _text(note)[:300]
    for k in range(1, len(steps)):
        assert_append(steps[k], steps[k - 1])


def test_resume_and_continue_append_under_the_same_session(live):
    live.run("Read a.txt please.")
    live.run("And now?", resume_session=True)
    live.run("Again?", continue_=True)
    steps, main = live.steps(), live.main()
    assert len({r.headers.get("x-claude-code-session-id") for r in main}) == 1
    for k in range(1, len(steps)):
        assert_append(steps[k], steps[k - 1])


def test_model_switch_re_renders_history_for_the_older_model(live):
    live.run("Read a.txt please.")
    live.run("And now?", continue_=True, extra_args=["--model", "claude-sonnet-4-5-20250929"])
    live.run("Back?", continue_=True)
    steps, main = live.steps(), live.main()
    first, sonnet, back = steps[1], steps[2], steps[3]
    body = main[2].json()
    assert body["model"] == "claude-sonnet-4-5-20250929"
    # Bytes: the thinking setting changes, and the whole history is re-rendered from
    # message 0 (role "system" messages folded into user messages, thinking blocks dropped).
    assert sonnet.diff.region == "settings" and sonnet.msg_diff.index == 0, str(sonnet)
    assert not any(m["role"] == "system" for m in body["messages"])
    # The economist: a model it has not seen is warm until known - break at the last message.
    assert (sonnet.brk, sonnet.reason) == (sonnet.messages - 1, "model-first-seen"), str(sonnet)
    assert sonnet.read.region == "none", str(sonnet)  # the emulator: that model's cache is empty
    # Back on the first model: its own history again, read up to its last request.
    assert (back.brk, back.reason) == (first.messages, "append"), str(back)
    assert (back.read.region, back.read.index) == ("messages", first.messages - 1), str(back)


def test_plan_mode_in_print_mode_appends(live):
    live.run("Read a.txt please.")
    live.run("Plan it.", continue_=True, extra_args=["--permission-mode", "plan"])
    live.run("Do it.", continue_=True)
    steps = live.steps()
    for k in range(1, len(steps)):
        assert_append(steps[k], steps[k - 1])
