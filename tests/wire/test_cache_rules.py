"""The cache facts (SPEC 3): the TTL table, and the TTL a request's markers ask for."""

from __future__ import annotations

import pytest

from scalpel_desktop.wire import cache_rules as cr

CC_5M = {"type": "ephemeral"}
CC_1H = {"type": "ephemeral", "ttl": "1h"}


def text(cc=None):
    return {"type": "text", "text": "x", **({"cache_control": cc} if cc is not None else {})}


def test_the_ttl_table():
    assert cr.ttl_seconds("5m") == 300
    assert cr.ttl_seconds("1h") == 3600
    assert cr.ttl_seconds("24h") == 86400
    assert cr.ttl_seconds(cr.AUTO_TTL) == 3600
    assert cr.CACHE_TTLS == ("5m", "1h") and cr.MAX_BREAKPOINTS == 4 and cr.LOOKBACK_BLOCKS == 20


@pytest.mark.parametrize("ttl", [None, "2h", "", "1H"])
def test_an_unknown_or_absent_ttl_is_the_longer_one(ttl):
    assert cr.ttl_seconds(ttl) == cr.LONGEST_TTL_S == 3600


@pytest.mark.parametrize("cc,ttl", [(CC_1H, "1h"), (CC_5M, "5m"), ({"ttl": "5m"}, "5m"),
                                    ({"ttl": "24h"}, "5m"), ("1h", "5m"), (None, "5m")])
def test_marker_ttl_is_1h_only_when_it_says_so(cc, ttl):
    assert cr.marker_ttl(cc) == ttl


def body(messages, **top):
    return {"model": "m", "messages": messages, **top}


def test_a_5m_marker_on_the_last_message_gives_5_minutes():
    doc = body([{"role": "user", "content": [text()]}, {"role": "user", "content": [text(CC_5M)]}])
    assert cr.message_ttl_s("messages", doc) == 300


def test_any_1h_marker_among_the_last_messages_gives_the_hour():
    doc = body([{"role": "user", "content": [text(CC_1H)]}, {"role": "assistant", "content": [text(CC_5M)]}])
    assert cr.message_ttl_s("messages", doc) == 3600


def test_markers_inside_a_tool_result_count():
    res = {"type": "tool_result", "tool_use_id": "t", "content": [text(CC_5M)]}
    assert cr.message_ttl_s("messages", body([{"role": "user", "content": [res]}])) == 300


def test_only_the_last_three_messages_are_read_then_the_system():
    old_1h = {"role": "user", "content": [text(CC_1H)]}
    plain = {"role": "user", "content": [text()]}
    doc = body([old_1h, plain, plain, plain], system=[text(CC_5M)])
    assert cr.message_ttl_s("messages", doc) == 300  # the old 1h marker is out of reach; the system's 5m
    doc = body([old_1h, plain, plain], system=[text(CC_5M)])
    assert cr.message_ttl_s("messages", doc) == 3600


def test_a_top_level_marker_counts():
    doc = body([{"role": "user", "content": "hi"}], cache_control=CC_5M)
    assert cr.message_ttl_s("messages", doc) == 300


def test_no_marker_anywhere_is_the_longer_ttl():
    assert cr.message_ttl_s("messages", body([{"role": "user", "content": "hi"}], system="you")) == 3600


def test_openai_retention():
    assert cr.message_ttl_s("chat", {"prompt_cache_retention": "24h"}) == 86400
    assert cr.message_ttl_s("responses", {"prompt_cache_retention": "24h"}) == 86400
    assert cr.message_ttl_s("chat", {"prompt_cache_retention": "in_memory"}) == 3600
    assert cr.message_ttl_s("responses", {}) == 3600


def test_a_shape_it_does_not_understand_does_not_raise():
    doc = body(["not a message", {"role": "user", "content": ["not a block", text(CC_5M)]}])
    assert cr.message_ttl_s("messages", doc) == 300
    assert cr.message_ttl_s("messages", {"messages": None}) == 3600


def test_an_effort_or_context_management_change_breaks_the_message_cache_and_nothing_before_it():
    # Claude Code 2.1.332 sends output_config (its effort) and context_management on every request
    # (../shared/corpus/wire) and warns that switching effort re-reads the history uncached: both are
    # settings of the message cache, for the economist's hash and for the cache model's chain.
    import json

    from scalpel_desktop.accounting.prefix_blocks import request_blocks
    from scalpel_desktop.wire.cache_rules import MESSAGE_CACHE_SETTINGS
    from scalpel_desktop.wire.view import regions
    from tests.support import corpus_dir

    lines = (corpus_dir("wire", "claude-code-2.1.332") / "requests.jsonl").read_text().splitlines()
    body = next(json.loads(x)["body"] for x in lines if "output_config" in json.loads(x)["body"])
    assert {"output_config", "context_management"} <= set(body) and set(MESSAGE_CACHE_SETTINGS) >= {
        "tool_choice", "thinking", "output_config", "context_management"}
    for field, value in (("output_config", {"effort": "low"}), ("context_management", {"edits": []})):
        other = dict(body, **{field: value})
        assert regions("messages", body)[2] != regions("messages", other)[2]  # a settings-changed break
        a, b = request_blocks(body), request_blocks(other)
        n_pre = len(request_blocks(dict(body, messages=[])))  # (deferred tools are not in the prefix)
        assert [x.chain for x in a[:n_pre]] == [x.chain for x in b[:n_pre]]  # tools and system keep theirs
        assert a[n_pre].chain != b[n_pre].chain  # every message entry is new
