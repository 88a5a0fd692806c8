"""Session titles come from Claude Code's own transcript files (summary / custom-title lines)."""

from __future__ import annotations

import json

from scalpel_desktop.tui.titles import CHUNK, title_of, titles, transcript_index


def _write(path, lines):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")


def test_the_last_title_wins_and_a_custom_title_counts(tmp_path):
    root = tmp_path / "projects"
    _write(root / "-home-u-proj" / "s1.jsonl", [{"type": "summary", "summary": "Old"},
                                              {"type": "summary", "summary": "  Fix   the tray  "}])
    _write(root / "-home-u-proj" / "s2.jsonl", [{"type": "user", "message": {"content": "a prompt, never a title"}},
                                              {"type": "custom-title", "customTitle": "Named by me"}])
    _write(root / "-home-u-proj" / "agent-s3.jsonl", [{"type": "summary", "summary": "sub-agent"}])
    assert set(transcript_index([root])) == {"s1", "s2"}
    assert titles(["s1", "s2", "s3", "nope"], [root]) == {"s1": "Fix the tray", "s2": "Named by me"}


def test_a_title_at_the_end_of_a_large_file_is_found_and_garbage_is_not_a_title(tmp_path):
    f = tmp_path / "big.jsonl"
    filler = [{"type": "assistant", "message": {"content": "x" * 500}}] * (3 * CHUNK // 500)
    _write(f, [{"type": "summary", "summary": "First"}, *filler, {"type": "summary", "summary": "Latest"}])
    assert title_of(f) == "Latest"
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b'{"type":"summary","summary": \n[1,2]\n"summary"\n')
    assert title_of(bad) == "" and title_of(tmp_path / "missing.jsonl") == ""
