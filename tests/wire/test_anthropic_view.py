"""The Anthropic view: what it indexes, what it will never cut, its markers, cwd and edits."""

from __future__ import annotations

from scalpel_desktop.wire import jsoncodec
from scalpel_desktop.wire.anthropic_view import AnthropicView, describe_content
from scalpel_desktop.wire.formats import view_for

CC = {"type": "ephemeral"}


def use(tid, name="Read", inp=None):
    return {"type": "tool_use", "id": tid, "name": name, "input": inp or {}}


def res(tid, content="out", **kw):
    return {"type": "tool_result", "tool_use_id": tid, "content": content, **kw}


def view(messages, **top) -> AnthropicView:
    v = view_for("messages", {"model": "m", "messages": messages, **top})
    assert isinstance(v, AnthropicView)
    return v


def test_results_are_named_after_their_call_with_text_size_and_flag_as_sent():
    v = view([{"role": "user", "content": "go"},
              {"role": "assistant", "content": [use("a", "Read", {"file_path": "/x"}), use("b", "Bash")]},
              {"role": "user", "content": [res("a", "12345"), res("b", [{"type": "text", "text": "l1"},
                                                                        {"type": "text", "text": "l2"}],
                                                                 is_error=True)]}])
    a, b = v.tool_results
    assert (a.name, a.text, a.chars, a.is_error, a.unit_index, a.block_index) == ("Read", "12345", 5, None, 2, 0)
    assert (b.name, b.text, b.chars, b.is_error, b.block_index) == ("Bash", "l1\nl2", 5, True, 1)
    assert v.tool_calls["a"].input == {"file_path": "/x"} and v.tool_calls["a"].unit_index == 1
    assert a.understood and b.understood


def test_what_it_never_cuts():
    v = view([{"role": "user", "content": [res("orphan")]},  # no call before it
              {"role": "assistant", "content": [use("a"), use("b"), use("c"), res("d")]},  # a result in an assistant turn
              {"role": "user", "content": [res("a", [{"type": "tool_reference", "tool_name": "mcp__x"}]),
                                           res("b", [{"type": "document", "source": {}}]),
                                           res("c"), res("c", "again")]}])
    by = {(r.id, r.block_index, r.unit_index): r.understood for r in v.tool_results}
    assert by == {("orphan", 0, 0): False, ("d", 3, 1): False, ("a", 0, 2): False, ("b", 1, 2): False,
                  ("c", 2, 2): True, ("c", 3, 2): False}
    assert v.result("c").block_index == 2  # the first of a repeated id stays addressable


def test_an_image_result_is_understood_and_counted():
    text, images, understood = describe_content([{"type": "image", "source": {}}, {"type": "text", "text": "cap"}])
    assert (text, images, understood) == ("cap", 1, True)


def test_units_keep_odd_items_without_failing():
    v = view(["loose", {"role": 5, "content": "x"}, {"role": "user", "content": ["not a block", res("z")]}])
    assert [u.role for u in v.units] == ["?", "?", "user"]
    assert [r.id for r in v.tool_results] == ["z"]


def test_breakpoints_in_processing_order_with_the_ttl_each_asks_for():
    v = view([{"role": "user", "content": [{"type": "text", "text": "a", "cache_control": {**CC, "ttl": "1h"}}]},
              {"role": "assistant", "content": [use("t")]},
              {"role": "user", "content": [res("t", [{"type": "text", "text": "o", "cache_control": CC}])]}],
             tools=[{"name": "A", "input_schema": {}, "cache_control": {**CC, "ttl": "1h"}}],
             system=[{"type": "text", "text": "s"}, {"type": "text", "text": "s2", "cache_control": CC}],
             cache_control=CC)
    got = [(b.region, b.index, b.block_index, b.ttl) for b in v.breakpoints()]
    assert got == [("tools", 0, None, "1h"), ("system", 1, None, "5m"), ("messages", 0, 0, "1h"),
                   ("messages", 2, 0, "5m"), ("auto", None, None, "5m")]
    assert v.ttl() == "1h"


def test_no_markers_no_ttl():
    assert view([{"role": "user", "content": "hi"}], system="s").ttl() is None


def test_cwd_from_a_string_system_or_an_early_message_text():
    assert view([{"role": "user", "content": "hi"}],
                system="You are Claude.\nPrimary working directory: /home/u/proj\n").cwd() == "/home/u/proj"
    env = "<env>\nWorking directory: /srv/app\nIs git repo: yes\n</env>"
    assert view([{"role": "user", "content": [{"type": "text", "text": env}]}]).cwd() == "/srv/app"
    late = [{"role": "user", "content": "x"}] * 6 + [{"role": "user", "content": "Working directory: /late"}]
    assert view(late).cwd() is None


def test_replace_keeps_the_other_blocks_and_the_flag_and_leaves_the_original_untouched():
    msgs = [{"role": "user", "content": "go"}, {"role": "assistant", "content": [use("a"), use("b")]},
            {"role": "user", "content": [res("a", "long output", is_error=False), res("b", "keep")]}]
    doc = {"model": "m", "messages": msgs}
    raw = jsoncodec.dumps(doc)
    v = view_for("messages", doc)
    v.replace_result_content("a", [{"type": "text", "text": "[stub]"}])
    assert jsoncodec.dumps(doc) == raw
    sent = jsoncodec.loads(v.serialize())["messages"][2]["content"]
    assert sent == [res("a", [{"type": "text", "text": "[stub]"}], is_error=False), res("b", "keep")]
    r = v.result("a")
    assert (r.text, r.is_error, r.name) == ("[stub]", False, "Read")
    h_before = view_for("messages", jsoncodec.loads(raw)).unit_hashes()
    h_after = v.unit_hashes()
    assert h_after[:2] == h_before[:2] and h_after[2] != h_before[2]
