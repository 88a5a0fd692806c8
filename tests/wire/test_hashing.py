"""The one per-message hash rule: markers are not content, a string content is its text block."""

from __future__ import annotations

import hashlib
import json

from scalpel_desktop.wire import hashing
from scalpel_desktop.wire.jsoncodec import dumps


def msg(content, **extra):
    return {"role": "user", "content": content, **extra}


def test_a_cache_marker_does_not_change_a_message_hash():
    plain = msg([{"type": "text", "text": "hi"}])
    marked = msg([{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral", "ttl": "1h"}}])
    assert hashing.message_hash(plain) == hashing.message_hash(marked)


def test_a_marker_nested_in_a_tool_result_is_stripped_too():
    inner = [{"type": "text", "text": "out"}]
    plain = msg([{"type": "tool_result", "tool_use_id": "t", "content": inner}])
    marked = msg([{"type": "tool_result", "tool_use_id": "t",
                   "content": [{**inner[0], "cache_control": {"type": "ephemeral"}}]}])
    assert hashing.message_hash(plain) == hashing.message_hash(marked)


def test_a_string_content_hashes_as_the_one_text_block_it_stands_for():
    assert hashing.message_hash(msg("hello")) == hashing.message_hash(msg([{"type": "text", "text": "hello"}]))
    # ... and only as one block: two blocks are different content
    assert hashing.message_hash(msg("hello")) != hashing.message_hash(
        msg([{"type": "text", "text": "hel"}, {"type": "text", "text": "lo"}]))


def test_content_role_and_key_order_all_count():
    base = hashing.message_hash(msg("a"))
    assert hashing.message_hash(msg("b")) != base
    assert hashing.message_hash({"role": "assistant", "content": "a"}) != base
    # compact JSON keeps key order: a reordered message is other bytes, so another hash
    assert hashing.message_hash({"content": "a", "role": "user"}) != base


def test_the_digest_is_16_bytes_of_sha256_of_the_compact_canonical_json():
    m = msg([{"type": "text", "text": "x", "cache_control": {"type": "ephemeral"}}])
    expected = hashlib.sha256(b'{"role":"user","content":[{"type":"text","text":"x"}]}').digest()[:16]
    assert hashing.message_hash(m) == expected
    assert len(expected) == 16


def test_given_bytes_are_used_when_they_carry_no_marker():
    m = msg([{"type": "text", "text": "x"}])
    assert hashing.canonical_bytes(m, b"PRE-SERIALISED") == b"PRE-SERIALISED"
    # with a marker in them the object is re-serialised without it
    marked = msg([{"type": "text", "text": "x", "cache_control": {"type": "ephemeral"}}])
    assert hashing.canonical_bytes(marked, dumps(marked)) == dumps(m)


def test_a_text_that_mentions_cache_control_is_content_not_a_marker():
    m = msg([{"type": "text", "text": 'see "cache_control" in the docs'}])
    assert hashing.canonical_bytes(m) == dumps(m)
    assert json.loads(hashing.canonical_bytes(m))["content"][0]["text"] == 'see "cache_control" in the docs'


def test_strip_returns_a_copy_and_leaves_the_original_alone():
    m = {"content": [{"text": "x", "cache_control": {"type": "ephemeral"}}]}
    out = hashing.strip_cache_control(m)
    assert out == {"content": [{"text": "x"}]}
    assert "cache_control" in m["content"][0]


def test_unit_digest_hashes_the_canonical_form_when_given():
    m = msg("hi")
    assert hashing.unit_digest(m, hashing.as_blocks(m)) == hashing.message_hash(m)
    assert hashing.unit_digest(m) != hashing.message_hash(m)


def test_as_blocks_only_for_string_content_and_keeps_other_keys_in_order():
    assert hashing.as_blocks(msg([{"type": "text", "text": "x"}])) is None
    assert hashing.as_blocks("not a message") is None
    assert list(hashing.as_blocks({"role": "user", "content": "x", "z": 1})) == ["role", "content", "z"]


def test_region_hash_is_hex_sha256_and_ignores_markers():
    tools = [{"name": "Read", "input_schema": {}}]
    marked = [{"name": "Read", "input_schema": {}, "cache_control": {"type": "ephemeral"}}]
    h = hashing.region_hash(tools)
    assert h == hashing.region_hash(marked) == hashing.sha(dumps(tools))
    assert len(h) == 64 and int(h, 16) >= 0
    assert hashing.region_hash(None) != hashing.region_hash([])
