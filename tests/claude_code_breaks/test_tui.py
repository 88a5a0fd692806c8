"""Claude Code 2.1.332's interactive terminal UI under tmux: interruptions (Esc) and plan
mode, through the real proxy to the emulator (facts in docs/claude-code-breaks.md)."""

from __future__ import annotations

import time

import pytest

from scalpel_desktop.emulator.script import call, say
from tests.claude_code_breaks.conftest import assert_append
from tests.support.claude_tui import ClaudeTui

pytestmark = pytest.mark.claude_cli


def _main_count(live) -> int:
    return len(live.main())


def test_escape_mid_turn(live):
    live.script.tracks["sleepy"] = [call("Bash", command="sleep 20", description="wait"), say("slept")]
    with ClaudeTui(live.url, live.workdir) as tui:
        tui.prompt("Read a.txt please.")
        tui.wait_for(lambda _s: _main_count(live) >= 2 and "first done" in tui.screen(), what="the first answer")

        # 1. Esc while the answer streams (the emulator goes silent after 3 events).
        live.emu.fault("slow", count=1, silences=[[3, 20.0]])
        tui.prompt("Take your time.")
        tui.wait_for(lambda _s: any(r.fault == "slow" for r in live.emu.received), what="the slow request")
        time.sleep(0.5)
        tui.keys("Escape")
        tui.wait_for(lambda _s: "Take your time." in tui.screen().split("\u276f")[-1], what="the prompt given back")
        tui.keys("C-u")
        tui.prompt("Go on.")
        tui.wait_for(lambda _s: _main_count(live) >= 4, what="the request after Esc")

        # 2. Esc while a tool runs.
        tui.wait_for(lambda _s: "later done" in tui.screen(), what="the answer after Esc")
        tui.prompt("SCRIPT:sleepy wait a bit")
        tui.wait_for(lambda _s: _main_count(live) >= 5, what="the Bash call")
        time.sleep(0.8)
        tui.keys("Escape")
        tui.wait_for_screen("Interrupted")
        tui.prompt("Go on after the tool.")
        tui.wait_for(lambda _s: _main_count(live) >= 6, what="the request after the interrupted tool")
    steps, main = live.steps(), live.main()
    streamed, withdrawn = steps[2], steps[3]
    # (1) The interrupted turn is withdrawn: its prompt went back to the input box and the
    # next request replaces the last message; nothing before it changed.
    assert withdrawn.diff.region == "messages" and withdrawn.diff.index == streamed.messages - 1, str(withdrawn)
    assert withdrawn.messages == streamed.messages
    assert "Go on." in str(main[3].json()["messages"][-1]) and "Take your time." not in str(main[3].json())
    # The economist: an append at the replaced message. The emulator's read stops one message
    # earlier, at the end of the last completed request (the withdrawn one's entry is gone).
    assert (withdrawn.brk, withdrawn.reason) == (streamed.messages - 1, "append"), str(withdrawn)
    assert (withdrawn.read.region, withdrawn.read.index) == ("messages", steps[1].messages - 1), str(withdrawn)
    # (2) A tool interrupted by Esc: its result says so, the history only grows.
    after_tool = main[5].json()["messages"]
    assert "interrupted" in str(after_tool[-1]).lower() or "interrupted" in str(after_tool[-2]).lower()
    assert_append(steps[5], steps[4])


def test_plan_mode_from_shift_tab_appends(live):
    with ClaudeTui(live.url, live.workdir) as tui:
        tui.prompt("Read a.txt please.")
        tui.wait_for(lambda _s: _main_count(live) >= 2 and "first done" in tui.screen(), what="the first answer")
        for _ in range(4):  # shift+tab cycles the permission modes: stop at plan mode
            if "plan mode on" in tui.screen():
                break
            tui.keys("BTab")
            time.sleep(0.3)
        assert "plan mode on" in tui.screen(), tui.screen()
        tui.prompt("Plan it.")
        tui.wait_for(lambda _s: _main_count(live) >= 3, what="the request in plan mode")
    steps, main = live.steps(), live.main()
    assert "plan mode" in str(main[2].json()["messages"][-3:]).lower()
    assert_append(steps[2], steps[1])


def test_an_effort_switch_is_a_settings_break(live):
    """Issue 23 step 3: ``/effort`` in the TUI changes ``output_config``, a field of the message
    cache's settings (wire/cache_rules.MESSAGE_CACHE_SETTINGS): the economist must call it a
    ``settings-changed`` break, and the emulator reads no message of the earlier request."""
    with ClaudeTui(live.url, live.workdir) as tui:
        tui.prompt("Read a.txt please.")
        tui.wait_for(lambda _s: _main_count(live) >= 2 and "first done" in tui.screen(), what="the first answer")
        before = _main_count(live)
        tui.prompt("/effort low")
        tui.wait_for_screen("Set effort level to low")
        tui.prompt("And now?")
        tui.wait_for(lambda _s: _main_count(live) > before, what="the request after /effort")
    steps, main = live.steps(), live.main()
    efforts = [(m.json().get("output_config") or {}).get("effort") for m in main]
    assert efforts[-1] == "low" and efforts[-2] != "low", efforts
    switched = steps[-1]
    assert (switched.brk, switched.reason) == (0, "settings-changed"), str(switched)
    assert switched.read.region == "system", str(switched)  # the emulator: no message read
