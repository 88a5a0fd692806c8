"""Issue 24's done-when, live: an effort switch, a model switch and an MCP tool-list change in
the real Claude Code 2.1.332 terminal UI (tmux), through the real proxy to the emulator, are each
a cache miss that ``scalpel misses --json`` names with its cause (facts in docs/claude-code-breaks.md).

Each conversation first reads a 600-line file, so what the switch throws away is far more than
the model's minimum cacheable length and the emulator's cache model bills a real re-write. The
miss's figures are checked against the emulator's own usage for that request (what it billed),
not against anything the proxy computed.
"""

from __future__ import annotations

import io
import json
import sys
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from scalpel_desktop.accounting.cache_model import min_cacheable_for
from scalpel_desktop.cli import main as scalpel_main
from scalpel_desktop.emulator.script import call, say
from tests.support.claude_tui import ClaudeTui

pytestmark = pytest.mark.claude_cli

SERVER = Path(__file__).with_name("flip_mcp_server.py")


def _big_file(live) -> None:
    lines = [f"line {i:05d}: the quick brown fox jumps over the lazy dog, entry {i * 7919 % 10007}" for i in range(600)]
    (live.workdir / "a.txt").write_text("\n".join(lines) + "\n")


def _misses() -> list[dict]:
    out = io.StringIO()
    with redirect_stdout(out):
        assert scalpel_main(["misses", "--json", "--since", "2000-01-01"]) == 0
    return json.loads(out.getvalue())["misses"]


def _first_answer(live, tui) -> int:
    tui.prompt("Read a.txt please.")
    tui.wait_for(lambda _s: len(live.main()) >= 2 and "first done" in tui.screen(), what="the first answer")
    return len(live.main())


def _ask_again(live, tui, before: int, after: str) -> None:
    """The next prompt after a switch, and its request reaching the emulator."""
    tui.prompt("And now?")
    tui.wait_for(lambda _s: len(live.main()) > before, what=f"the request after {after}")


def _the_one_miss(live) -> tuple[dict, object]:
    """The session's only miss, and the emulator's record of the request it was found on."""
    live.settle()
    main = live.main()
    got = _misses()
    assert len(got) == 1, (got, [(r.json()["model"], r.usage) for r in main])
    missed = [r for r in main if r.usage.cache_read == got[0]["read_stopped_at"] and r.usage.cache_write > 0]
    assert missed, (got, [r.usage for r in main])
    return got[0], missed[-1]


def _priced_as_billed(miss: dict, req, previous) -> None:
    """What the miss says was re-written is what the emulator billed: the previous request's
    cached mark, short by the read, capped by the writes."""
    u, p = req.usage, previous.usage
    want = min(p.cache_read + p.cache_write - u.cache_read, u.cache_write)
    assert miss["tokens_rewritten"] == want > min_cacheable_for(miss["model"]), (miss, u, p)
    assert miss["cost_usd"] > 0


def test_an_effort_switch_is_a_settings_changed_miss(live):
    _big_file(live)
    with ClaudeTui(live.url, live.workdir) as tui:
        before = _first_answer(live, tui)
        tui.prompt("/effort low")
        tui.wait_for_screen("Set effort level to low")
        _ask_again(live, tui, before, "/effort")
    miss, req = _the_one_miss(live)
    main = live.main()
    assert req.json()["output_config"]["effort"] == "low" and main[-2].json()["output_config"]["effort"] != "low"
    assert miss["cause"] == "settings-changed" and miss["detail"]["fields"] == ["output_config"], miss
    assert miss["detail"]["break"] == 0  # the settings salt every message: the read stops before them
    _priced_as_billed(miss, req, main[-2])


def test_a_model_switch_is_a_model_switch_miss(live):
    _big_file(live)
    with ClaudeTui(live.url, live.workdir) as tui:
        before = _first_answer(live, tui)
        tui.prompt("/model sonnet")
        tui.wait_for_screen("Switch model?")  # 2.1.332 warns that the history gets re-read
        tui.keys("Enter")
        tui.wait_for_screen("Set model to")
        _ask_again(live, tui, before, "/model")
    miss, req = _the_one_miss(live)
    main = live.main()
    was = main[-2].json()["model"]
    assert req.json()["model"] != was and "sonnet" in req.json()["model"]
    assert miss["cause"] == "model-switch" and miss["detail"] == {"from": was, "first_on_model": True}, miss
    assert miss["read_stopped_at"] == 0  # the other model's cache is not this one's
    _priced_as_billed(miss, req, main[-2])


def test_an_mcp_tool_list_change_is_a_tools_changed_miss(live, tmp_path):
    """A stdio MCP server adds a tool when ``flip`` is called and says so (at protocol 2026-07-28,
    on a ``subscriptions/listen`` stream); Claude Code re-lists and its next request declares the
    new tool. Tool search is off, so MCP tools sit in the prompt's prefix."""
    _big_file(live)
    cfg = tmp_path / "mcp.json"
    state = tmp_path / "state"
    cfg.write_text(json.dumps({"mcpServers": {"flipper": {"command": sys.executable, "args": [str(SERVER), str(state)]}}}))
    live.script.tracks["flip"] = [call("mcp__flipper__flip"), say("flipped")]
    lists = state.with_suffix(".lists")
    with ClaudeTui(live.url, live.workdir, args=["--mcp-config", str(cfg)],
                   env_extra={"ENABLE_TOOL_SEARCH": "false"}) as tui:
        tui.wait_for(lambda _s: lists.exists(), what="Claude Code listing the server's tools")
        _first_answer(live, tui)
        tui.prompt("SCRIPT:flip flip it")
        tui.wait_for(lambda _s: "flipped" in tui.screen(), what="the flip's answer")
        tui.wait_for(lambda _s: lists.read_text().count("list") >= 2, what="Claude Code re-listing the tools")
        _ask_again(live, tui, len(live.main()), "the tool-list change")
    miss, req = _the_one_miss(live)
    main = live.main()
    names = [t["name"] for t in req.json()["tools"]]
    assert "mcp__flipper__gauge" in names and "mcp__flipper__gauge" not in [t["name"] for t in main[-2].json()["tools"]]
    assert "mid-conversation-tool-changes" in req.headers.get("anthropic-beta", "")
    assert miss["cause"] == "tools-changed", miss
    assert miss["detail"]["added"] == ["mcp__flipper__gauge"] and miss["detail"]["removed"] == [], miss
    # The client declares mid-conversation tool changes, so the economist saw no break (SPEC 6):
    # the miss watch named it from the tools in the prefix.
    assert miss["detail"]["seen_by"] == "miss-watch"
    _priced_as_billed(miss, req, main[-2])
