"""The interactive Claude Code 2.1.332 TUI, driven in tmux through the proxy to the emulator,
keeps working after ``/compact`` and after auto-compaction.

After a compaction Claude Code sends ``{"role": "system", "content": []}`` (the record's
``json()`` parses it, keeping any other keys Claude Code adds) inside
``messages``; the real API answers it, so the emulator must too (docs/emulator.md). The
assertions are on the emulator's record (every request it received and what it answered)
and on the screen.
"""

from __future__ import annotations

import json

import pytest

from scalpel_desktop.config import Config
from scalpel_desktop.emulator.script import Turn
from scalpel_desktop.emulator.scripts import text_reply
from scalpel_desktop.emulator.testing import running_emulator
from scalpel_desktop.runtime import Runtime
from tests.support.claude_tui import ClaudeTui

pytestmark = pytest.mark.claude_cli

REPLY = "Hello from the scalpel emulator."
CONTINUED = "This session is being continued from a previous conversation"


@pytest.fixture
def routed():
    """(emulator, proxy URL): a real proxy in front of the emulator."""
    with running_emulator(text_reply(REPLY)) as emu:
        rt = Runtime(Config.load(), {"anthropic_upstream": emu.url, "openai_upstream": emu.url}, port=0).start()
        try:
            yield emu, f"http://127.0.0.1:{rt.port}"
        finally:
            rt.stop()


def _turn(tui: ClaudeTui, emu, text: str, done: str = "●") -> str:
    """Send one prompt; wait until the emulator answered something for it and the screen shows the answer."""
    before = len(emu.received)

    def answered(screen: str) -> bool:
        new = emu.received[before:]
        if not new or any(r.status is None for r in new):
            return False
        tail = screen.rsplit(f"❯ {text}", 1)
        return len(tail) == 2 and done in tail[1]

    tui.send(text)
    return tui.wait_for(answered, timeout=90, what=f"an answer to {text!r}")


def _after_compaction(emu) -> list:
    return [r for r in emu.api_requests if CONTINUED in json.dumps(r.json().get("messages", [])[:1])]


def _empty_system(rec) -> bool:
    """The request carries ``{"role": "system", "content": []}`` (what Claude Code sends after a compaction)."""
    return any(m.get("role") == "system" and m.get("content") == [] for m in rec.json()["messages"])


def _assert_all_accepted(emu) -> None:
    refused = [(r.status, r.error, r.body[:200]) for r in emu.api_requests if r.status != 200]
    assert not refused, refused


def test_compact_then_three_more_turns(routed, tmp_path):
    emu, url = routed
    workdir = tmp_path / "project"
    workdir.mkdir()
    with ClaudeTui(url, workdir) as tui:
        tui.wait_for(lambda s: "❯" in s, timeout=60, what="the prompt")
        for text in ("first turn", "second turn", "third turn"):
            _turn(tui, emu, text)
        before = len(emu.api_requests)
        _turn(tui, emu, "/compact", done="Compacted")
        assert len(emu.api_requests) > before  # the summary request
        after = ("one after compaction", "two after compaction", "three after compaction")
        for text in after:
            screen = _turn(tui, emu, text)
        _assert_all_accepted(emu)
        continued = _after_compaction(emu)
        assert len(continued) >= 3
        assert any(_empty_system(r) for r in continued), \
            "Claude Code sent no empty system message: the case this test exists for did not happen"
        for text in after:
            assert any(text in json.dumps(r.json()["messages"]) for r in continued), text
        assert all(r.answer and r.answer["content"][-1]["text"] == REPLY for r in continued)
        assert "API Error" not in screen and f"❯ {after[-1]}" in screen
        assert REPLY in screen.rsplit(f"❯ {after[-1]}", 1)[1]


def test_auto_compaction_then_three_more_turns(routed, tmp_path):
    """Long (collapsed, so the screen stays readable) thinking in every answer and a low auto-compact
    threshold (CLAUDE_AUTOCOMPACT_PCT_OVERRIDE, a Claude Code setting) make Claude Code compact on its
    own after a few turns."""
    emu, url = routed
    filler = "Thinking about the context window while it fills up. " * 80
    emu.set_script(lambda headers, body, api: Turn(text=REPLY, thinking=filler))
    workdir = tmp_path / "project"
    workdir.mkdir()
    with ClaudeTui(url, workdir, env_extra={"CLAUDE_AUTOCOMPACT_PCT_OVERRIDE": "2"}) as tui:
        tui.wait_for(lambda s: "❯" in s, timeout=60, what="the prompt")
        for i in range(12):
            _turn(tui, emu, f"turn {i} before compaction")
            if _after_compaction(emu):
                break
        assert _after_compaction(emu), "Claude Code never compacted on its own"
        start = len(_after_compaction(emu))
        for text in ("one after auto-compaction", "two after auto-compaction", "three after auto-compaction"):
            screen = _turn(tui, emu, text)
        _assert_all_accepted(emu)
        continued = _after_compaction(emu)
        assert len(continued) >= start + 3
        # here Claude Code carried the date in the system message it keeps after the summary
        # (empty after /compact above): either way, system messages inside messages are accepted
        assert all(any(m.get("role") == "system" for m in r.json()["messages"]) for r in continued)
        assert "API Error" not in screen and REPLY in screen.rsplit("❯ three after auto-compaction", 1)[1]
