"""Region sizes of a request body and the working directory it states (sizes and a path, never content)."""

from __future__ import annotations

from scalpel_desktop.accounting.context_regions import measure, under_home, working_directory
from scalpel_desktop.wire.jsoncodec import dumps


def _doc():
    return {
        "model": "claude-sonnet-4-5",
        "system": [{"type": "text", "text": "You are Claude Code." * 50},
                   {"type": "text", "text": "# Environment\n - Primary working directory: /home/u/work/proj\n"}],
        "tools": [{"name": "Read", "description": "Read a file." * 40, "input_schema": {}},
                  {"name": "mcp__github__create_issue", "description": "Create an issue." * 20, "input_schema": {}}],
        "messages": [
            {"role": "user", "content": "hello"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Read", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x" * 3300}]},
        ],
    }


def test_regions_split_the_body_and_sum_to_its_estimate():
    doc = _doc()
    body = dumps(doc)
    r = measure("messages", doc, len(body))
    assert set(r) == {"system", "tools", "mcp_tools", "messages", "tool_results"}
    assert r["tool_results"] == 1000  # 3,300 characters at 3.3 per token
    assert r["tools"] > r["mcp_tools"] > 0 and r["system"] > 0
    assert abs(sum(r.values()) - len(body) / 3.3) <= 5
    assert measure("count_tokens", doc, len(body)) is None and measure("messages", None, 10) is None


def test_working_directory_is_shown_under_home():
    assert working_directory(_doc(), home="/home/u") == "~/work/proj"
    assert working_directory(_doc(), home="/home/other") == "/home/u/work/proj"
    assert working_directory({"messages": [{"role": "user", "content": "no env"}]}) is None
    assert under_home("/home/u", "/home/u") == "~" and under_home("/home/uu/x", "/home/u") == "/home/uu/x"


# ---------------------------------------------------------------- resumed from the previous request
import hashlib  # noqa: E402

from hypothesis import given, settings, strategies as st  # noqa: E402

from scalpel_desktop.accounting.context_regions import ResultsResumed, result_chars  # noqa: E402


def _msg(i: int, n: int) -> dict:
    if i % 2:
        return {"role": "assistant", "content": [{"type": "tool_use", "id": f"t{i}", "name": "Read", "input": {}}]}
    return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{i - 1}", "content": "x" * n}]}


def _digests(msgs: list) -> list[bytes]:
    return [hashlib.sha256(dumps(m)).digest()[:16] for m in msgs]


# Each step: grow by k messages, rewrite message j (a client rewrite), drop the last k, or send the same again.
_steps = st.lists(st.tuples(st.sampled_from(["grow", "rewrite", "shrink", "again"]), st.integers(0, 40),
                            st.integers(0, 500)), min_size=1, max_size=25)


@settings(max_examples=150, deadline=None)
@given(_steps)
def test_resumed_result_chars_are_the_walk_over_every_message(steps):
    """However a conversation's history moves between requests, the resumed count is the full walk's."""
    resumed = ResultsResumed()
    msgs: list = [_msg(0, 3)]
    for op, k, n in steps:
        if op == "grow":
            msgs = msgs + [_msg(len(msgs) + i, n + i) for i in range(k + 1)]
        elif op == "rewrite" and msgs:
            msgs = list(msgs)
            msgs[k % len(msgs)] = _msg(k % len(msgs), n + 7)
        elif op == "shrink":
            msgs = msgs[:max(1, len(msgs) - k)]
        assert resumed.chars(("s", ""), "messages", msgs, _digests(msgs)) == result_chars("messages", msgs)


def test_a_growing_conversation_walks_only_its_new_messages():
    resumed = ResultsResumed()
    msgs = [_msg(i, 10 + i) for i in range(200)]
    assert resumed.chars(("s", ""), "messages", msgs, _digests(msgs)) == result_chars("messages", msgs)
    assert resumed.resumed == 0
    grown = msgs + [_msg(200 + i, 5) for i in range(4)]
    assert resumed.chars(("s", ""), "messages", grown, _digests(grown)) == result_chars("messages", grown)
    assert resumed.resumed == 1
    other = [_msg(i, 99) for i in range(204)]  # another conversation's messages under the same key
    assert resumed.chars(("s", ""), "messages", other, _digests(other)) == result_chars("messages", other)
    assert resumed.resumed == 1  # (no prefix of it was seen: walked in full)
    assert resumed.chars(None, "messages", grown, _digests(grown)) == result_chars("messages", grown)
    assert resumed.chars(("s", ""), "messages", grown, None) == result_chars("messages", grown)
    assert resumed.chars(("s", ""), "messages", grown, ["h"] * len(grown)) == result_chars("messages", grown)


def test_measure_with_resumed_results_is_measure():
    msgs = [_msg(i, 40) for i in range(30)]
    doc = {"model": "m", "system": "s", "tools": [{"name": "Read"}], "messages": msgs}
    body = len(dumps(doc))
    resumed = ResultsResumed()
    of = lambda e, m: resumed.chars(("s", ""), e, m, _digests(m))  # noqa: E731
    assert measure("messages", doc, body, results_of=of) == measure("messages", doc, body)
