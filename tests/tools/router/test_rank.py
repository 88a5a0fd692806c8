"""tools/router/rank.py: the local TF-IDF index the MCP router ranks tools with."""

from __future__ import annotations

import pytest

from scalpel_desktop.tools.router.rank import ToolIndex, stem, terms, tool_text
from tests.tools.mcp_catalog import LABELLED, tool_dicts


@pytest.mark.parametrize("word, stemmed", [
    ("issues", "issu"), ("issue", "issu"), ("replies", "reply"), ("creating", "creat"), ("created", "creat"),
    ("create", "creat"), ("boxes", "box"), ("class", "class"), ("status", "status"), ("is", "is"),
])
def test_stem_makes_forms_of_a_word_meet(word, stemmed):
    assert stem(word) == stemmed


def test_terms_split_camel_snake_and_drop_stop_words():
    assert terms("createPullRequest") == ["creat", "pull", "request"]
    assert terms("send_slack_message to the channel") == ["send", "slack", "messag", "channel"]
    assert terms("a I x") == []
    assert terms(None) == []


def test_tool_text_weighs_the_name_three_times_and_reads_parameters():
    words = tool_text({"name": "close_issue", "description": "Close it.",
                       "inputSchema": {"properties": {"reason": {"description": "Why closing"}}}})
    assert words.count("issu") == 3
    assert "reason" in words and "why" in words
    assert tool_text({"name": "x_y", "input_schema": "not a dict"}) == []  # single letters are dropped


def test_rank_puts_the_matching_tool_first_and_ties_keep_catalogue_order():
    idx = ToolIndex([
        {"name": "send_email", "description": "Send an email."},
        {"name": "search_email", "description": "Search the mailbox."},
        {"name": "get_weather", "description": "Weather for a city."},
    ])
    ranked = idx.rank("weather in Paris")
    assert ranked[0][0] == "get_weather" and ranked[0][1] > 0
    assert [n for n, s in ranked[1:]] == ["send_email", "search_email"]  # both 0: catalogue order
    assert next(n for n, _ in idx.rank("email", among=["search_email", "get_weather"])) == "search_email"


def test_low_signal_when_no_query_term_is_known():
    idx = ToolIndex([{"name": "send_email", "description": "Send an email."}])
    assert idx.low_signal("zzzz qqqq")
    assert idx.scores("zzzz") == {"send_email": 0.0}
    assert not idx.low_signal("email")
    assert ToolIndex([]).low_signal("anything")


def test_routing_quality_on_the_labelled_queries():
    index = ToolIndex(tool_dicts())
    hits = []
    for query, expected in LABELLED:
        ranked = [n for n, _s in index.rank(query)]
        hits.append(expected in ranked[:5])
    n = sum(hits)
    print(f"\nrouting quality: {n} of {len(LABELLED)} labelled queries rank the expected tool in the top 5")
    assert len(LABELLED) >= 10 and n >= 8


