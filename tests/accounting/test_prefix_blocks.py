"""accounting/prefix_blocks.py: a request as cacheable blocks whose chain hashes the prefix through them."""

from __future__ import annotations

import pytest

from scalpel_desktop.accounting.prefix_blocks import (
    Block,
    CacheControlError,
    PrefixBuilder,
    builder_for,
    openai_blocks,
    request_blocks,
    ttl_of,
    with_breakpoints,
)

EPH = {"type": "ephemeral"}


def body(**kw):
    b = {
        "tools": [{"name": "Read", "input_schema": {}}],
        "system": [{"type": "text", "text": "sys", "cache_control": EPH}],
        "messages": [{"role": "user", "content": "hello"},
                     {"role": "assistant", "content": [{"type": "text", "text": "hi"}]}],
    }
    b.update(kw)
    return b


def test_blocks_follow_tools_system_messages_with_their_markers():
    blocks = request_blocks(body())
    assert len(blocks) == 4
    assert [b.breakpoint for b in blocks] == [None, "5m", None, None]
    assert len({b.chain for b in blocks}) == 4


def test_the_chain_ignores_cache_control_but_not_content_roles_or_settings():
    base = request_blocks(body())
    unmarked = request_blocks(body(system=[{"type": "text", "text": "sys"}]))
    assert [b.chain for b in unmarked] == [b.chain for b in base]
    changed = request_blocks(body(messages=[{"role": "user", "content": "hellO"}]))
    assert changed[:2] == base[:2] and changed[2].chain != base[2].chain
    other_role = request_blocks(body(messages=[{"role": "assistant", "content": "hello"}]))
    assert other_role[2].chain != base[2].chain
    thinking = request_blocks(body(thinking={"type": "enabled", "budget_tokens": 1024}))
    assert [b.chain for b in thinking[:2]] == [b.chain for b in base[:2]] and thinking[2].chain != base[2].chain


def test_a_block_moved_across_a_message_boundary_changes_the_chain():
    one = request_blocks({"messages": [{"role": "user", "content": [{"type": "text", "text": "a"},
                                                                      {"type": "text", "text": "b"}]}]})
    two = request_blocks({"messages": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]})
    assert one[0].chain == two[0].chain and one[1].chain != two[1].chain


def test_top_level_cache_control_marks_the_last_block_and_bad_ttl_is_refused():
    blocks = request_blocks(body(cache_control={"type": "ephemeral", "ttl": "1h"}))
    assert blocks[-1].breakpoint == "1h"
    with pytest.raises(CacheControlError, match="Input should be '5m' or '1h'"):
        request_blocks(body(cache_control={"type": "ephemeral", "ttl": "2h"}))
    assert ttl_of(None) == "5m" and ttl_of({"ttl": "1h"}) == "1h"


def test_deferred_tools_are_not_in_the_prefix():
    deferred = body(tools=[{"name": "Read", "input_schema": {}}, {"name": "X", "defer_loading": True}])
    assert [b.chain for b in request_blocks(deferred)] == [b.chain for b in request_blocks(body())]


def test_tokens_default_to_the_rule_and_a_counter_can_replace_it():
    blocks = request_blocks({"messages": [{"role": "user", "content": "hi"}]})
    assert blocks[0].tokens == 7  # {"type":"text","text":"hi"}: 27 bytes
    assert request_blocks({"messages": [{"role": "user", "content": "hi"}]}, count=lambda b: 100)[0].tokens == 100


def test_the_builder_extends_without_rehashing_and_copies_fork():
    pb = builder_for(body())
    fork = pb.copy()
    pb.add_message("user", "next")
    fork.add_message("user", "other")
    assert pb.blocks[:4] == fork.blocks[:4] and pb.blocks[4].chain != fork.blocks[4].chain
    whole = request_blocks(body(messages=body()["messages"] + [{"role": "user", "content": "next"}]))
    assert [b.chain for b in whole] == [b.chain for b in pb.blocks]
    assert pb.total_tokens == sum(b.tokens for b in pb.blocks)


def test_sections_must_come_in_order():
    pb = PrefixBuilder()
    pb.add_message("user", "x")
    with pytest.raises(ValueError, match="tools -> system -> messages"):
        pb.add_tool({"name": "late"})


def test_add_raw_and_with_breakpoints():
    pb = PrefixBuilder()
    a = pb.add_raw(b"unit-1", 10, new_message_role="user")
    b = pb.add_raw(b"unit-2", 20, "1h")
    assert (a.tokens, b.tokens, b.breakpoint) == (10, 20, "1h")
    marked = with_breakpoints(pb.blocks, {0: "5m", 1: None})
    assert [m.breakpoint for m in marked] == ["5m", None] and pb.blocks[1].breakpoint == "1h"
    assert isinstance(marked[0], Block) and marked[0].chain == a.chain


def test_openai_bodies_have_no_breakpoints_and_accept_a_string_input():
    chat = openai_blocks({"tools": [{"type": "function", "function": {"name": "f"}}],
                          "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]})
    assert len(chat) == 3 and all(b.breakpoint is None for b in chat)
    resp = openai_blocks({"instructions": "be brief", "input": "hello"})
    resp2 = openai_blocks({"instructions": "be brief", "input": [{"role": "user", "content": "hello"}]})
    assert len(resp) == 2 and [b.chain for b in resp] == [b.chain for b in resp2]
