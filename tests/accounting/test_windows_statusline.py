"""The window table gives the `context_window_size` Claude Code's own statusline JSON reports.

The interactive TUI runs in tmux against the emulator with a ``statusLine`` command that saves
its stdin (SPEC section 9); the saved JSON names the model and its window.
"""

from __future__ import annotations

import pytest

from scalpel_desktop.accounting.windows import context_window
from scalpel_desktop.emulator.scripts import text_reply
from scalpel_desktop.emulator.testing import running_emulator
from tests.support.claude_tui import ClaudeTui, captured_statuslines

pytestmark = pytest.mark.claude_cli


# None: the default model (Claude Code 2.1.332 picks claude-opus-5-5, a native 1M window);
# a 200k model; a 200k model with the 1M option switched on by Claude Code's [1m] suffix.
@pytest.mark.parametrize("model", [None, "claude-sonnet-4-5", "claude-haiku-4-5[1m]"])
def test_window_table_matches_claude_codes_statusline(model, tmp_path):
    workdir = tmp_path / "project"
    workdir.mkdir()
    out = tmp_path / "statusline"
    with running_emulator(text_reply("Hello from the scalpel emulator.")) as emu:
        tui = ClaudeTui(emu.url, workdir, args=["--model", model] if model else []).start(statusline_dir=out)
        try:
            tui.wait_for(lambda s: "❯" in s, timeout=60, what="the prompt")
            tui.send("hello")
            tui.wait_for(lambda s: any((d.get("context_window") or {}).get("current_usage")
                                       for d in captured_statuslines(out)),
                         timeout=60, what="a statusline input after an answer")
        finally:
            tui.stop()
        sent = {r.json()["model"] for r in emu.api_requests}
    docs = captured_statuslines(out)
    assert docs
    for doc in docs:
        name, size = doc["model"]["id"], doc["context_window"]["context_window_size"]
        assert name == (model or "claude-opus-5-5")
        assert context_window(name) == size, (name, size)
    # the model on the wire has no [1m] suffix: the 1M option travels as a beta header
    assert sent == {(model or "claude-opus-5-5").replace("[1m]", "")}
