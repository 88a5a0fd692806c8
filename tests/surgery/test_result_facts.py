"""surgery/result_facts.py: what the doom rules know of one tool result, asked alike by the scan and the watch."""

from __future__ import annotations

from scalpel_desktop.surgery.result_facts import (
    IMAGE_TOKENS, KINDS, STUB_MARK, TIER_KINDS, _Facts, _allowed_kinds, doom_limits, is_stub, result_tokens)
from scalpel_desktop.wire.view import ToolCall, ToolResult


def _result(name, text="x" * 4000, images=0, is_error=None, content=None, understood=True):
    return ToolResult("t1", 3, 0, name, content if content is not None else text, text, len(text), is_error,
                      images, understood)


def test_a_stub_is_known_in_both_shapes_and_is_never_cut_again():
    assert is_stub(STUB_MARK + " spilled]") and is_stub([{"type": "text", "text": STUB_MARK + " x]"}])
    assert not is_stub("plain") and not is_stub([{"type": "text", "text": "a"}, {"type": "text", "text": "b"}])
    assert _allowed_kinds(_result("Read", content=STUB_MARK + " x]"), False) == frozenset()


def test_protected_and_mcp_results_may_die_of_nothing_but_a_snapshot_tool_of_a_later_snapshot():
    assert _allowed_kinds(_result("AskUserQuestion"), False) == frozenset()
    assert _allowed_kinds(_result("mcp__db__query"), False) == frozenset()
    assert _allowed_kinds(_result("mcp__db__query"), True) == frozenset(KINDS)
    assert _allowed_kinds(_result("mcp__pw__browser_snapshot"), False) == {"dead_snapshot"}
    assert _allowed_kinds(_result("Read", understood=False), False) == frozenset()


def test_facts_say_what_a_result_touches_and_weighs():
    r = _result("Bash", text="ok", images=1)
    f = _Facts(r, ToolCall("t1", "Bash", {"command": "cd /tmp && cat a.txt"}, 2))
    assert f.has_cd and f.may_touch_file and f.callable_ok
    assert f.tokens == result_tokens(r) >= IMAGE_TOKENS
    failed = _Facts(_result("Read", is_error=True), ToolCall("t1", "Read", {"file_path": "/a"}, 2))
    assert not failed.callable_ok and failed.dup_key is not None


def test_the_limits_follow_the_settings():
    lim = doom_limits({"tier": 1, "keep_recent": 5, "min_cut_tokens": 10})
    assert lim.kinds == TIER_KINDS[1] and lim.keep_recent == 5
    assert lim.min_cut >= 120  # never under twice a stub
