"""accounting/tokens.py: the emulator's exact billing rule and the plain estimate."""

from __future__ import annotations

from scalpel_desktop.accounting.tokens import (
    canonical_block,
    estimate_tokens,
    rule_tokens,
)


def test_canonical_block_drops_only_the_cache_marker_and_copies():
    block = {"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}
    assert canonical_block(block) == {"type": "text", "text": "hi"}
    assert "cache_control" in block
    plain = {"type": "text", "text": "hi"}
    assert canonical_block(plain) is plain
    assert canonical_block("str") == "str"


def test_rule_tokens_is_ceil_of_compact_json_bytes_over_four():
    block = {"type": "text", "text": "hi"}  # {"type":"text","text":"hi"} is 27 bytes
    assert rule_tokens(block) == 7
    assert rule_tokens({**block, "cache_control": {"type": "ephemeral", "ttl": "1h"}}) == 7
    assert rule_tokens({"type": "text", "text": "é"}) == 7  # 2 UTF-8 bytes: 26 -> 7
    assert rule_tokens({"type": "text", "text": "abcd"}) == 8  # 29 bytes -> 8


def test_estimate_tokens_is_characters_over_3_3_and_at_least_one():
    assert estimate_tokens("") == 0
    assert estimate_tokens("a") == 1
    assert estimate_tokens("x" * 33) == 10
    assert estimate_tokens("x" * 330) == 100
