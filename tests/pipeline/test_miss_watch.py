"""pipeline/miss_watch.py: each answered request's read against what its conversation had cached."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from scalpel_desktop.accounting.prices import PriceTable
from scalpel_desktop.exchange import ApiRequest, Decision, Exchange, ResponseResult
from scalpel_desktop.pipeline.identify import Identify
from scalpel_desktop.pipeline.miss_watch import MissWatch
from scalpel_desktop.wire.jsoncodec import dumps
from scalpel_desktop.wire.usage import Usage

MODEL = "claude-sonnet-4-5-20250929"
PRICES = PriceTable.builtin()


def body(model=MODEL, tools=("Read", "Bash"), effort="medium") -> dict:
    return {"model": model, "max_tokens": 100, "tools": [{"name": n, "input_schema": {}} for n in tools],
            "output_config": {"effort": effort},
            "metadata": {"user_id": '{"session_id":"4b1d2c3e-1111-2222-3333-444455556666"}'},
            "messages": [{"role": "user", "content": "hi"}]}


def ex_at(t: float, usage: Usage, doc: dict | None = None, break_reason: str | None = None,
          rewrite_tokens: int = 0, status: int = 200) -> Exchange:
    doc = doc or body()
    ex = Exchange(ApiRequest("POST", "/v1/messages", "", "anthropic", "messages",
                             {"anthropic-version": "2023-06-01"}, dumps(doc), t))
    Identify().on_request(ex)
    ex.model = doc["model"]
    ex.decision = Decision("unchanged", "", figures={"break_reason": break_reason, "break": 0} if break_reason else {})
    if rewrite_tokens:
        class Sent:  # what the surgery stage leaves on the exchange of a warm cut
            pass
        ex.surgery = Sent()
        ex.surgery.rewrite_tokens = rewrite_tokens
    ex.response = ResponseResult(status, usage, 1.0, 2.0, t + 2)
    return ex


def warm(read, write=0):
    return Usage(input_tokens=3, cache_read=read, cache_write_5m=write, output_tokens=10)


def test_a_read_that_reaches_what_was_cached_is_no_miss_and_a_short_one_is():
    w = MissWatch(PRICES)
    assert w.fields(ex_at(1000, warm(0, 20_000))) == {}  # the first request: nothing known cached
    assert w.fields(ex_at(1010, warm(20_000, 500))) == {}
    got = w.fields(ex_at(1020, warm(2_000, 19_000)))  # an eviction: no gap, no change in the bytes
    assert got["miss_cause"] == "unexplained" and got["miss_tokens"] == 18_500
    rates = PRICES.rates(MODEL)
    one = 10 * (rates.cost(Usage(cache_write_5m=100_000)) - rates.cost(Usage(cache_read=100_000)))  # per million
    assert abs(got["miss_usd"] - 18_500 * one / 1e6) < 1e-7  # re-written tokens x (write - read)


def test_a_pause_past_the_ttl_is_ttl_expired():
    w = MissWatch(PRICES)
    w.fields(ex_at(1000, warm(0, 20_000)))
    got = w.fields(ex_at(1002 + 301, warm(0, 20_500)))  # 301 s after the answer ended (at 1002)
    assert got["miss_cause"] == "ttl-expired" and '"gap_s":301' in got["miss_detail"]


def test_tools_and_settings_changes_name_what_changed():
    w = MissWatch(PRICES)
    w.fields(ex_at(1000, warm(0, 20_000)))
    got = w.fields(ex_at(1010, warm(1_000, 20_000), body(tools=("Read", "Grep")), "tools-changed"))
    assert got["miss_cause"] == "tools-changed"
    assert '"added":["Grep"]' in got["miss_detail"] and '"removed":["Bash"]' in got["miss_detail"]
    got = w.fields(ex_at(1020, warm(1_000, 20_000), body(tools=("Read", "Grep"), effort="low"), "settings-changed"))
    assert got["miss_cause"] == "settings-changed" and '"fields":["output_config"]' in got["miss_detail"]


def test_a_model_switch_and_back():
    w = MissWatch(PRICES)
    w.fields(ex_at(1000, warm(0, 20_000)))
    got = w.fields(ex_at(1010, warm(0, 20_000), body(model="claude-opus-4-5")))  # that model's first request
    assert got["miss_cause"] == "model-switch" and '"first_on_model":true' in got["miss_detail"]
    got = w.fields(ex_at(1020, warm(0, 20_000)))  # back: its own entry should still be there
    assert got["miss_cause"] == "model-switch" and "claude-opus-4-5" in got["miss_detail"]
    assert w.fields(ex_at(1030, warm(20_000, 100))) == {}


def test_our_own_warm_cut_is_not_a_miss_nor_an_error_answer():
    w = MissWatch(PRICES)
    w.fields(ex_at(1000, warm(0, 20_000)))
    assert w.fields(ex_at(1010, warm(500, 19_000), rewrite_tokens=19_000)) == {}
    assert w.fields(ex_at(1020, Usage(), status=529)) == {}


@settings(max_examples=60, deadline=None)
@given(first=st.integers(0, 200_000), extra=st.integers(0, 50_000), write=st.integers(0, 60_000),
       gap=st.floats(0, 4000))
def test_never_a_miss_when_the_read_reaches_the_cached_mark(first, extra, write, gap):
    w = MissWatch(PRICES)
    w.fields(ex_at(1000, warm(0, first)))
    assert w.fields(ex_at(1002 + gap, warm(first + extra, write))) == {}


def test_a_tools_change_the_economist_let_pass_is_still_named_but_a_deferred_tool_is_not():
    """A client declaring mid-conversation-tool-changes is priced as if a tools change kept the
    cache (no break); when the read then stops short, the tools that sit in the prefix name it."""
    w = MissWatch(PRICES)
    w.fields(ex_at(1000, warm(0, 20_000)))
    got = w.fields(ex_at(1010, warm(0, 20_100), body(tools=("Read", "Bash", "mcp__x__gauge"))))
    assert got["miss_cause"] == "tools-changed"
    assert '"added":["mcp__x__gauge"]' in got["miss_detail"] and '"seen_by":"miss-watch"' in got["miss_detail"]
    deferred = body(tools=("Read", "Bash", "mcp__x__gauge"))
    deferred["tools"].append({"name": "mcp__x__later", "input_schema": {}, "defer_loading": True})
    got = w.fields(ex_at(1020, warm(0, 20_200), deferred))  # a deferred tool is not in the prefix
    assert got["miss_cause"] == "unexplained"


def _marked_body(extra_blocks: int) -> dict:
    doc = body()
    doc["messages"] = [{"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}]}]
    if extra_blocks:
        doc["messages"][0]["content"][0].pop("cache_control")
        doc["messages"] += [{"role": "assistant", "content": [{"type": "text", "text": f"a{i}"} for i in range(extra_blocks)]},
                            {"role": "user", "content": [{"type": "text", "text": "q", "cache_control": {"type": "ephemeral"}}]}]
    return doc


def test_an_append_past_the_lookback_is_named_lookback_and_a_short_one_is_not():
    w = MissWatch(PRICES)
    w.fields(ex_at(1000, warm(0, 20_000), _marked_body(0)))
    got = w.fields(ex_at(1010, warm(2_000, 19_000), _marked_body(24)))  # 25 blocks past the last marker
    assert got["miss_cause"] == "lookback" and '"blocks_past":25' in got["miss_detail"]
    w = MissWatch(PRICES)
    w.fields(ex_at(1000, warm(0, 20_000), _marked_body(0)))
    got = w.fields(ex_at(1010, warm(2_000, 19_000), _marked_body(10)))  # within reach: something else
    assert got["miss_cause"] == "unexplained"
