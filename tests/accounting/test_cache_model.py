"""The prompt-cache billing model against SPEC section 3's worked cases, to the token.

Every request here is a real Messages body; block sizes are exact under the
emulator's rule (ceil(compact JSON bytes / 4)), so every figure is the one
computed by hand in the SPEC.
"""

from __future__ import annotations

import copy

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scalpel_desktop.accounting.cache_model import (
    Block,
    CacheControlError,
    PrefixBuilder,
    PromptCache,
    min_cacheable_for,
    request_blocks,
    with_breakpoints,
)
from scalpel_desktop.accounting.tokens import rule_tokens
from scalpel_desktop.accounting.usage import Usage
from scalpel_desktop.wire.jsoncodec import dumps

CC5 = {"type": "ephemeral"}
CC1H = {"type": "ephemeral", "ttl": "1h"}


def sized(template: dict, field: str, tokens: int, fill: str = "a") -> dict:
    """``template`` with ``field`` padded so the block is exactly ``tokens`` rule tokens."""
    block = dict(template)
    block[field] = ""
    base = len(dumps(block))
    block[field] = fill * (4 * tokens - base)
    assert rule_tokens(block) == tokens
    return block


def text(tokens: int, fill: str = "a", cc: dict | None = None) -> dict:
    block = sized({"type": "text", "text": ""}, "text", tokens, fill)
    if cc:
        block["cache_control"] = cc
    return block


def tool(name: str, tokens: int) -> dict:
    return sized({"name": name, "description": "", "input_schema": {"type": "object"}}, "description", tokens)


def tool_use(tid: str, tokens: int) -> dict:
    block = {"type": "tool_use", "id": tid, "name": "Read", "input": {"file_path": ""}}
    base = len(dumps(block))
    block["input"] = {"file_path": "p" * (4 * tokens - base)}
    assert rule_tokens(block) == tokens
    return block


RESULT_FRAME = rule_tokens({"type": "tool_result", "tool_use_id": "toolu_1", "content": ""})


def tool_result(tid: str, content_tokens: int, cc: dict | None = None) -> dict:
    """A tool_result whose content adds exactly ``content_tokens`` to its empty frame."""
    block = sized({"type": "tool_result", "tool_use_id": tid, "content": ""}, "content",
                  RESULT_FRAME + content_tokens, "r")
    if cc:
        block["cache_control"] = cc
    return block


def base_body(cc: dict = CC5, system_fill: str = "s") -> dict:
    """Tools 1,000 tokens, system 2,000 with a breakpoint on its last block."""
    return {
        "model": "claude-sonnet-4-5",
        "max_tokens": 100,
        "tools": [tool("a", 400), tool("b", 600)],
        "system": [text(1000, system_fill), text(1000, "t", cc)],
        "messages": [],
    }


def case1(cc: dict = CC5, system_fill: str = "s") -> dict:
    body = base_body(cc, system_fill)
    body["messages"] = [{"role": "user", "content": [text(500, "u", cc)]}]
    return body


def case2(cc: dict = CC5, system_fill: str = "s", result_tokens: int = 250) -> dict:
    """Case 1 plus 300 tokens in 2 blocks: a tool_use, and a result whose content is
    250 tokens (the block is those plus its empty frame; the two blocks sum to 300)."""
    body = case1(cc, system_fill)
    del body["messages"][0]["content"][0]["cache_control"]
    body["messages"] += [
        {"role": "assistant", "content": [tool_use("toolu_1", 50 - RESULT_FRAME)]},
        {"role": "user", "content": [tool_result("toolu_1", result_tokens, cc)]},
    ]
    return body


def case3(cc: dict = CC5, result_tokens: int = 250) -> dict:
    """Case 2 plus 100 more tokens; the breakpoint moves to the new last block."""
    body = case2(cc, result_tokens=result_tokens)
    last = body["messages"][-1]["content"]
    del last[0]["cache_control"]
    last.append(text(100, "n", cc))
    return body


def bill(cache: PromptCache, body: dict, now: float) -> Usage:
    return cache.bill(body["model"], request_blocks(body), now)


def U(input=0, w5=0, w1=0, read=0) -> Usage:  # noqa: N802 - short for the tables below
    return Usage(input_tokens=input, cache_write_5m=w5, cache_write_1h=w1, cache_read=read)


def test_block_sizes_are_the_spec_ones():
    blocks = request_blocks(case2())
    assert [b.tokens for b in blocks] == [400, 600, 1000, 1000, 500, 50 - RESULT_FRAME, 250 + RESULT_FRAME]
    assert [b.breakpoint for b in blocks] == [None, None, None, "5m", None, None, "5m"]


# ---------------------------------------------------------------- the 8 worked cases

def test_case1_cold_write():
    assert bill(PromptCache(), case1(), 0) == U(w5=3500)


def test_case2_warm_read_and_write_the_new_tail():
    cache = PromptCache()
    bill(cache, case1(), 0)
    assert bill(cache, case2(), 60) == U(read=3500, w5=300)


def test_case3_expired_after_five_minutes():
    cache = PromptCache()
    bill(cache, case1(), 0)
    bill(cache, case2(), 60)
    assert bill(cache, case3(), 60 + 301) == U(w5=3900)


def test_case4_one_hour_ttl_survives():
    cache = PromptCache()
    bill(cache, case1(CC1H), 0)
    assert bill(cache, case2(CC1H), 60) == U(read=3500, w1=300)
    assert bill(cache, case3(CC1H), 60 + 301) == U(read=3800, w1=100)


def test_case5_system_change_breaks_everything_after_it():
    cache = PromptCache()
    bill(cache, case1(), 0)
    body = case2()
    t = body["system"][0]["text"]
    body["system"][0]["text"] = "X" + t[1:]  # one character, same length
    assert bill(cache, body, 60) == U(w5=3800)


@pytest.mark.parametrize("after_case2", [False, True])
def test_case6_lookback_of_twenty_blocks(after_case2):
    cache = PromptCache()
    bill(cache, case1(), 0)
    body = case1()
    if after_case2:
        bill(cache, case2(), 30)
        body = case2()
        del body["messages"][-1]["content"][0]["cache_control"]
    else:
        del body["messages"][0]["content"][0]["cache_control"]
    extra = [text(20, "x") for _ in range(25)]
    extra[-1]["cache_control"] = CC5
    body["messages"].append({"role": "user", "content": extra})
    total = sum(b.tokens for b in request_blocks(body))
    assert bill(cache, body, 60) == U(read=3000, w5=total - 3000)


def test_case7_below_minimum_is_not_cached():
    cache = PromptCache(min_cacheable=1024)
    body = {"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": [text(900, "q", CC5)]}]}
    assert bill(cache, body, 0) == U(input=900)
    assert bill(cache, body, 10) == U(input=900)
    assert cache.entries == {}


def test_case8_cutting_a_dead_result_before_a_cold_write():
    full, cut = PromptCache(), PromptCache()
    for cache in (full, cut):
        bill(cache, case1(), 0)
        bill(cache, case2(), 60)
    assert bill(full, case3(), 361) == U(w5=3900)
    assert bill(cut, case3(result_tokens=10), 361) == U(w5=3660)
    later_full, later_cut = case3(), case3(result_tokens=10)
    for body in (later_full, later_cut):
        del body["messages"][-1]["content"][-1]["cache_control"]
        body["messages"].append({"role": "assistant", "content": [text(40, "z", CC5)]})
    u_full, u_cut = bill(full, later_full, 400), bill(cut, later_cut, 400)
    assert (u_full.cache_read, u_cut.cache_read) == (3900, 3660)
    assert u_full.cache_read - u_cut.cache_read == 240
    assert u_full.cache_write_5m == u_cut.cache_write_5m == 40


# ---------------------------------------------------------------- what breaks what

def test_tools_change_breaks_everything():
    cache = PromptCache()
    bill(cache, case1(), 0)
    body = case2()
    body["tools"][0]["description"] = "Z" + body["tools"][0]["description"][1:]
    assert bill(cache, body, 60) == U(w5=3800)


def test_messages_change_keeps_tools_and_system():
    cache = PromptCache()
    bill(cache, case1(), 0)
    body = case2()
    body["messages"][0]["content"][0]["text"] = "Q" + body["messages"][0]["content"][0]["text"][1:]
    assert bill(cache, body, 60) == U(read=3000, w5=800)


@pytest.mark.parametrize("setting", [{"tool_choice": {"type": "any"}},
                                     {"thinking": {"type": "enabled", "budget_tokens": 2000}}])
def test_settings_change_breaks_messages_only(setting):
    cache = PromptCache()
    bill(cache, case1(), 0)
    body = case2()
    body.update(setting)
    assert bill(cache, body, 60) == U(read=3000, w5=800)


def test_message_boundaries_and_roles_count():
    one = {"model": "m", "messages": [{"role": "user", "content": [text(600, "a"), text(600, "b")]}]}
    two = {"model": "m", "messages": [{"role": "user", "content": [text(600, "a")]},
                                      {"role": "user", "content": [text(600, "b")]}]}
    other_role = copy.deepcopy(two)
    other_role["messages"][1]["role"] = "assistant"
    chains = [request_blocks(b)[-1].chain for b in (one, two, other_role)]
    assert len(set(chains)) == 3
    # ...but the first block is the same prefix in all three
    assert len({request_blocks(b)[0].chain for b in (one, two, other_role)}) == 1


def test_cache_control_and_string_form_do_not_change_the_hash():
    a = {"model": "m", "messages": [{"role": "user", "content": "hello there"}]}
    b = {"model": "m", "messages": [{"role": "user", "content": [{"type": "text", "text": "hello there",
                                                                    "cache_control": CC5}]}]}
    ba, bb = request_blocks(a), request_blocks(b)
    assert ba[0].chain == bb[0].chain and ba[0].tokens == bb[0].tokens
    assert (ba[0].breakpoint, bb[0].breakpoint) == (None, "5m")


# ---------------------------------------------------------------- API rules

def test_fifth_breakpoint_rejected():
    body = case2()
    body["messages"][0]["content"][0]["cache_control"] = CC5
    body["tools"][1]["cache_control"] = CC5
    assert len([b for b in request_blocks(body) if b.breakpoint]) == 4
    PromptCache().bill("m", request_blocks(body), 0)  # four is fine
    body["system"][0]["cache_control"] = CC5
    with pytest.raises(CacheControlError, match="maximum of 4"):
        PromptCache().bill("m", request_blocks(body), 0)


def test_one_hour_must_come_before_five_minutes():
    body = case2(CC1H)
    body["messages"][-1]["content"][0]["cache_control"] = CC5  # 1h system, then 5m: fine
    assert bill(PromptCache(), body, 0) == U(w1=3000, w5=800)
    bad = case2(CC5)
    bad["messages"][-1]["content"][0]["cache_control"] = CC1H
    with pytest.raises(CacheControlError, match="1h"):
        bill(PromptCache(), bad, 0)


def test_unknown_ttl_rejected():
    body = case1({"type": "ephemeral", "ttl": "10m"})
    with pytest.raises(CacheControlError):
        request_blocks(body)


def test_hit_refreshes_the_ttl():
    refreshed, idle = PromptCache(), PromptCache()
    for cache in (refreshed, idle):
        bill(cache, case1(), 0)
    assert bill(refreshed, case1(), 200) == U(read=3500)  # refresh at t=200 -> lives until 500
    assert bill(refreshed, case1(), 450) == U(read=3500)
    assert bill(idle, case1(), 450) == U(w5=3500)  # never refreshed: expired at 300


def test_expiry_is_exact():
    cache = PromptCache()
    bill(cache, case1(), 0)
    assert bill(cache, case1(), 299.9).cache_read == 3500
    cache2 = PromptCache()
    bill(cache2, case1(), 0)
    assert bill(cache2, case1(), 300.0).cache_read == 0


@pytest.mark.parametrize("distance,hit", [(20, True), (21, False)])
def test_lookback_limit(distance, hit):
    pb = PrefixBuilder()
    for k in range(40):
        pb.add_message("user", [text(100, chr(ord("a") + k % 26))])
    blocks = pb.blocks
    cache = PromptCache(min_cacheable=1024)
    first = 10  # entry at block 10 (1,100 tokens)
    cache.bill("m", blocks[: first + 1], 0, breakpoints={first: "5m"})
    usage = cache.bill("m", blocks[: first + distance + 1], 1, breakpoints={first + distance: "5m"})
    assert usage.cache_read == (1100 if hit else 0)


@pytest.mark.parametrize("tokens,cached", [(1023, False), (1024, True)])
def test_minimum_length(tokens, cached):
    cache = PromptCache(min_cacheable=1024)
    body = {"model": "m", "messages": [{"role": "user", "content": [text(tokens, "m", CC5)]}]}
    first = bill(cache, body, 0)
    second = bill(cache, body, 1)
    if cached:
        assert (first, second) == (U(w5=tokens), U(read=tokens))
    else:
        assert first == second == U(input=tokens)


def test_min_cacheable_table():
    assert min_cacheable_for("claude-haiku-4-5-20251001") == 4096
    assert min_cacheable_for("claude-sonnet-4-5-20250929") == 1024
    assert min_cacheable_for("claude-3-5-haiku-20241022") == 2048
    assert min_cacheable_for("something-else") == 1024
    assert min_cacheable_for(None) == 1024


def test_automatic_top_level_cache_control_marks_the_last_block():
    body = case2()
    for b in body["system"]:
        b.pop("cache_control", None)
    body["messages"][-1]["content"][0].pop("cache_control")
    body["cache_control"] = CC5
    blocks = request_blocks(body)
    assert [b.breakpoint for b in blocks].count("5m") == 1 and blocks[-1].breakpoint == "5m"
    assert bill(PromptCache(), body, 0) == U(w5=3800)


def test_openai_style_automatic_prefix_caching():
    cache = PromptCache(min_cacheable=1024)
    pb = PrefixBuilder()
    for k in range(5):
        pb.add_message("user", [text(300, chr(97 + k))])
    blocks = pb.blocks
    assert cache.bill_automatic("gpt", blocks[:4], 0) == U(input=1200)
    assert cache.bill_automatic("gpt", blocks, 10) == U(input=300, read=1200)


# ---------------------------------------------------------------- incremental builder

def test_incremental_builder_matches_request_blocks():
    body = case3()
    pb = PrefixBuilder()
    for t in body["tools"]:
        pb.add_tool(t)
    pb.add_system(body["system"])
    pb.start_messages(body)
    fork = None
    for i, m in enumerate(body["messages"]):
        if i == 1:
            fork = pb.copy()
        pb.add_message(m["role"], m["content"])
    assert pb.blocks == request_blocks(body)
    for m in body["messages"][1:]:
        fork.add_message(m["role"], m["content"])
    assert fork.blocks == pb.blocks


def test_builder_with_own_token_counts_and_moved_breakpoints():
    pb = PrefixBuilder(count=lambda block: 700)
    pb.add_message("user", "one")
    pb.add_message("assistant", "two")
    blocks = with_breakpoints(pb.blocks, {1: "5m"})
    assert [b.tokens for b in blocks] == [700, 700] and blocks[1].breakpoint == "5m"
    cache = PromptCache()
    assert cache.bill("k", blocks, 0) == U(w5=1400)
    assert cache.bill("k", pb.blocks, 1, breakpoints={1: "5m"}) == U(read=1400)
    assert isinstance(blocks[0], Block)


def test_entries_are_per_cache_key():
    cache = PromptCache()
    bill(cache, case1(), 0)
    other = case1()
    other["model"] = "claude-opus-4-1"
    assert bill(cache, other, 1) == U(w5=3500)


def test_deferred_tools_are_not_in_the_prefix():
    """Claude Code loads deferred tools mid-conversation (tool search): no cache break."""
    body = case2()
    before = request_blocks(body)
    body["tools"].insert(1, {"name": "WebFetch", "description": "fetch", "input_schema": {"type": "object"},
                             "defer_loading": True})
    assert request_blocks(body) == before
    cache = PromptCache()
    bill(cache, case1(), 0)
    assert bill(cache, body, 60) == U(read=3500, w5=300)


# ---------------------------------------------------------------- properties


@st.composite
def requests(draw):
    n = draw(st.integers(1, 40))
    tokens = draw(st.lists(st.integers(1, 600), min_size=n, max_size=n))
    marks = sorted(draw(st.sets(st.integers(0, n - 1), max_size=4)))
    n1h = draw(st.integers(0, len(marks)))
    bps = {i: ("1h" if k < n1h else "5m") for k, i in enumerate(marks)}
    return [Block(f"c{k}-{t}", t) for k, t in enumerate(tokens)], bps


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(requests(), st.floats(0, 4000)), min_size=1, max_size=6))
def test_every_bill_accounts_for_every_token_and_repeats_read_what_was_written(seq):
    cache = PromptCache(min_cacheable=1024)
    now = 0.0
    for (blocks, bps), dt in seq:
        now += dt
        first = cache.bill("k", blocks, now, breakpoints=bps)
        total = sum(b.tokens for b in blocks)
        assert first.input_tokens + first.cache_write + first.cache_read == total
        again = cache.bill("k", blocks, now + 1, breakpoints=bps)
        assert again.cache_write == 0
        assert again.cache_read == first.cache_read + first.cache_write
        assert again.input_tokens == first.input_tokens


def test_dry_run_prices_without_touching_the_cache():
    cache = PromptCache()
    bill(cache, case1(), 0)
    snapshot = {k: (e.ttl, e.expires) for k, e in cache.entries.items()}
    blocks = request_blocks(case2())
    assert cache.bill("claude-sonnet-4-5", blocks, 60, dry_run=True) == U(read=3500, w5=300)
    assert {k: (e.ttl, e.expires) for k, e in cache.entries.items()} == snapshot
    assert bill(cache, case2(), 60) == U(read=3500, w5=300)  # the real bill is unchanged by the dry run
    with pytest.raises(ValueError, match="out of range"):
        cache.bill("k", blocks, 61, breakpoints={len(blocks): "5m"})
