"""The prompt-cache billing model against SPEC section 3's worked cases, to the token,
and what breaks what. The API's rules and the properties: ``test_cache_model_rules.py``.

Every request here is a real Messages body; block sizes are exact under the
emulator's rule (ceil(compact JSON bytes / 4)), so every figure is the one
computed by hand in the SPEC.
"""

from __future__ import annotations

import copy

import pytest

from scalpel_desktop.accounting.cache_model import PromptCache, request_blocks
from tests.accounting.cache_bodies import CC1H, CC5, RESULT_FRAME, U, bill, case1, case2, case3, text


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
