"""tools/skills.py: Claude Code's skill listing, parsed and cut entry by entry."""

from __future__ import annotations

from scalpel_desktop.tools import skills

LISTING = (
    "Intro line.\n\n"
    f"{skills.SKILL_HEADER}\n\n"
    "- dataviz: Use this skill for charts\n"
    "TRIGGER - read FIRST\n"
    "- claude-api: Reference for the API\n"
    "- init: Initialize a CLAUDE.md\n"
    "\n"
    "# Next section\n- not-a-skill: prose list\n"
)


def test_entries_include_their_continuation_lines_and_stop_at_the_blank_line():
    entries = skills.parse_entries(LISTING)
    assert [e.name for e in entries] == ["dataviz", "claude-api", "init"]
    assert LISTING[entries[0].start:entries[0].end] == "- dataviz: Use this skill for charts\nTRIGGER - read FIRST\n"
    assert skills.skill_names(LISTING) == ["dataviz", "claude-api", "init"]
    start, end = skills.listing_span(LISTING)
    assert LISTING[start:end].startswith(skills.SKILL_HEADER) and LISTING[start:end].endswith("CLAUDE.md\n")


def test_no_header_or_prose_after_it_is_no_listing():
    assert skills.parse_entries("no skills here") == [] and skills.listing_span("nothing") is None
    assert skills.parse_entries(f"{skills.SKILL_HEADER}\nSome prose, not entries.\n- x: y\n") == []
    assert skills.listing_span(skills.SKILL_HEADER) == (0, len(skills.SKILL_HEADER))


def test_remove_entries_drops_exactly_the_named_lines():
    text, removed = skills.remove_entries(LISTING, {"dataviz", "init", "absent"})
    assert [e.name for e in removed] == ["dataviz", "init"]
    assert "dataviz" not in text and "TRIGGER" not in text and "Initialize" not in text
    assert "- claude-api: Reference for the API\n\n# Next section" in text
    assert skills.remove_entries(LISTING, {"absent"}) == (LISTING, [])


def test_strip_from_message_handles_string_and_block_content_without_touching_the_input():
    msg = {"role": "system", "content": LISTING}
    new, removed = skills.strip_from_message(msg, {"claude-api"})
    assert removed == [("claude-api", "- claude-api: Reference for the API\n")]
    assert msg["content"] == LISTING and "claude-api" not in new["content"]
    blocks = {"role": "system", "content": [{"type": "image"}, {"type": "text", "text": LISTING}]}
    new, removed = skills.strip_from_message(blocks, {"init"})
    assert [n for n, _ in removed] == ["init"] and new["content"][0] == {"type": "image"}
    assert blocks["content"][1]["text"] == LISTING
    assert skills.strip_from_message(blocks, {"absent"}) == (blocks, [])


def test_message_texts_and_snapshot_detection():
    assert skills.message_texts({"content": "a"}) == ["a"]
    assert skills.message_texts({"content": [{"type": "text", "text": "b"}, {"type": "text", "text": 3}]}) == ["b"]
    assert skills.message_texts("junk") == []
    assert skills.is_snapshot_message({"role": "system", "content": LISTING})
    assert not skills.is_snapshot_message({"role": "user", "content": LISTING})
    assert not skills.is_snapshot_message({"role": "system", "content": "Be brief."})
    msgs = [{"role": "user", "content": LISTING}, {"role": "system", "content": LISTING}, "x"]
    assert skills.listing_messages(msgs) == [1]
