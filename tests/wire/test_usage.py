"""The provider's usage counts, read from Anthropic and OpenAI answers."""

from __future__ import annotations

from scalpel_desktop.wire.usage import Usage


def test_anthropic_with_the_ttl_split():
    u = Usage.from_anthropic({
        "input_tokens": 12, "cache_creation_input_tokens": 700, "cache_read_input_tokens": 40000,
        "cache_creation": {"ephemeral_5m_input_tokens": 200, "ephemeral_1h_input_tokens": 500},
        "output_tokens": 88,
    })
    assert u == Usage(input_tokens=12, cache_write_5m=200, cache_write_1h=500, cache_read=40000, output_tokens=88)
    assert u.cache_write == 700
    assert u.prompt_tokens == 12 + 700 + 40000


def test_anthropic_without_a_split_bills_the_writes_at_5m():
    u = Usage.from_anthropic({"input_tokens": 3, "cache_creation_input_tokens": 900, "cache_read_input_tokens": 0})
    assert (u.cache_write_5m, u.cache_write_1h) == (900, 0)


def test_an_inconsistent_split_keeps_the_billed_total():
    # the split says less than the total: the 1h part is kept, the rest is 5m
    u = Usage.from_anthropic({"cache_creation_input_tokens": 900,
                              "cache_creation": {"ephemeral_5m_input_tokens": 100, "ephemeral_1h_input_tokens": 300}})
    assert (u.cache_write_5m, u.cache_write_1h) == (600, 300)


def test_a_1h_split_larger_than_the_total_never_counts_more_than_was_billed():
    u = Usage.from_anthropic({"cache_creation_input_tokens": 50,
                              "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 80}})
    assert u.cache_write == 50
    assert (u.cache_write_5m, u.cache_write_1h) == (0, 50)


def test_a_streamed_message_delta_without_cache_fields():
    assert Usage.from_anthropic({"output_tokens": 15}) == Usage(output_tokens=15)


def test_junk_counts_read_as_zero():
    u = Usage.from_anthropic({"input_tokens": True, "cache_read_input_tokens": -5, "output_tokens": "9",
                              "cache_creation_input_tokens": None, "cache_creation": "5m"})
    assert u == Usage()
    assert Usage.from_anthropic(None) == Usage() == Usage.from_openai(["not", "a", "mapping"])


def test_openai_chat_cached_tokens_are_taken_out_of_the_input():
    u = Usage.from_openai({"prompt_tokens": 2000, "completion_tokens": 30,
                           "prompt_tokens_details": {"cached_tokens": 1536}})
    assert u == Usage(input_tokens=464, cache_read=1536, output_tokens=30)
    assert u.prompt_tokens == 2000


def test_openai_responses_names():
    u = Usage.from_openai({"input_tokens": 1200, "output_tokens": 7, "input_tokens_details": {"cached_tokens": 1024}})
    assert u == Usage(input_tokens=176, cache_read=1024, output_tokens=7)


def test_openai_without_details_or_with_more_cached_than_prompt():
    assert Usage.from_openai({"prompt_tokens": 10, "completion_tokens": 2}) == Usage(input_tokens=10, output_tokens=2)
    assert Usage.from_openai({"prompt_tokens": 10, "prompt_tokens_details": {"cached_tokens": 12}}).input_tokens == 0
    assert Usage.from_openai({"prompt_tokens": 10, "prompt_tokens_details": None}) == Usage(input_tokens=10)


def test_as_dict_has_the_five_stored_fields():
    assert Usage(1, 2, 3, 4, 5).as_dict() == {"input_tokens": 1, "cache_write_5m": 2, "cache_write_1h": 3,
                                                "cache_read": 4, "output_tokens": 5}
