"""The prompt-cache billing model: the API's cache_control rules, TTLs, lookback and
minimum length, the incremental block builder, and properties over random requests.
The SPEC's worked cases: ``test_cache_model.py``."""

from __future__ import annotations

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
from tests.accounting.cache_bodies import CC1H, CC5, U, bill, case1, case2, case3, text


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


# ---------------------------------------------------------------- the undocumented readings

@pytest.mark.parametrize("lookback", [12, 20, 28])
@pytest.mark.parametrize("extra", [0, 1])
def test_lookback_is_switchable(lookback, extra):
    pb = PrefixBuilder()
    for k in range(50):
        pb.add_message("user", [text(100, chr(ord("a") + k % 26))])
    blocks = pb.blocks
    cache = PromptCache.variant(f"lookback={lookback}")
    assert cache.lookback == lookback
    first = 10
    cache.bill("m", blocks[: first + 1], 0, breakpoints={first: "5m"})
    end = first + lookback + extra
    usage = cache.bill("m", blocks[: end + 1], 1, breakpoints={end: "5m"})
    assert usage.cache_read == (1100 if extra == 0 else 0)


def _two_breakpoint_session(refresh: str) -> tuple[PromptCache, list]:
    """System entry at block 9, message entry at block 19: then only the message entry
    is read, at t=200. Does that hit refresh the system entry too?"""
    pb = PrefixBuilder()
    for k in range(30):
        pb.add_message("user", [text(200, chr(ord("a") + k % 26))])
    blocks = pb.blocks
    cache = PromptCache(min_cacheable=1024, refresh=refresh)
    cache.bill("m", blocks[:20], 0, breakpoints={9: "5m", 19: "5m"})
    got = cache.bill("m", blocks[:20], 200, breakpoints={9: "5m", 19: "5m"})
    assert got.cache_read == 4000
    return cache, blocks


@pytest.mark.parametrize("refresh,system_alive_at_400", [("each", True), ("read", False)])
def test_refresh_reading_decides_whether_other_breakpoints_live_on(refresh, system_alive_at_400):
    cache, blocks = _two_breakpoint_session(refresh)
    # at t=400 a request sharing only the first 10 blocks: the system entry (written at 0)
    # lives on only when the hit at t=200 refreshed it
    other = blocks[:10] + PrefixBuilder().blocks  # the same prefix, nothing more
    got = cache.bill("m", other, 400, breakpoints={9: "5m"})
    assert (got.cache_read == 2000) is system_alive_at_400


def test_refresh_read_still_refreshes_the_entry_read():
    cache, blocks = _two_breakpoint_session("read")
    assert cache.bill("m", blocks[:20], 450, breakpoints={19: "5m"}).cache_read == 4000  # refreshed at 200


def test_unknown_variant_is_refused():
    with pytest.raises(ValueError, match="lookback=N"):
        PromptCache.variant("lookahead=3")
    with pytest.raises(ValueError, match="refresh"):
        PromptCache(refresh="never")
