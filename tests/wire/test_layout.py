"""wire/layout.py: where each message of a raw Messages body sits, proven against the bytes.

The invariants: every located message's byte span re-serializes to exactly
those bytes (and carries that message's economist hash); a layout built on a
previous body's is the one built from scratch; a body the codec would not
write back is never laid out; ``round_trips_by_layout`` agrees with the full
round-trip check.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from scalpel_desktop.wire.hashing import message_hash
from scalpel_desktop.wire.jsoncodec import dumps, loads, round_trips
from scalpel_desktop.wire.layout import MESSAGES_KEY, LaidOutBody, Layout, head_of, locate, repeats, round_trips_by_layout

text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)
block = st.one_of(
    st.fixed_dictionaries({"type": st.just("text"), "text": text}),
    st.fixed_dictionaries({"type": st.just("tool_result"), "tool_use_id": st.from_regex(r"toolu_[a-z0-9]{4}", fullmatch=True),
                           "content": text, "is_error": st.booleans()}),
)
message = st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant"]),
                                 "content": st.one_of(text, st.lists(block, min_size=1, max_size=3))})
messages = st.lists(message, min_size=1, max_size=8)
shells = st.fixed_dictionaries({"model": st.sampled_from(["claude-sonnet-4-5", "m"])},
                               optional={"max_tokens": st.integers(1, 64_000), "system": text, "stream": st.booleans(),
                                         # a nested object with a "messages" key of its own
                                         "metadata": st.fixed_dictionaries({"messages": messages})})


def body(msgs, shell=None, messages_first=False):
    shell = dict(shell or {"model": "m", "max_tokens": 100})
    doc = {"messages": msgs, **shell} if messages_first else {**shell, "messages": msgs}
    return dumps(doc), doc


def assert_proven(raw: bytes, doc: dict, layout: Layout) -> None:
    msgs = doc["messages"]
    assert len(layout.ends) == len(layout.sizes) == len(layout.hashes) == len(msgs)
    for i, m in enumerate(msgs):
        span = raw[layout.ends[i] - layout.sizes[i]: layout.ends[i]]
        assert span == dumps(m)
        assert layout.hashes[i] == message_hash(m)
        assert raw[layout.ends[i]: layout.ends[i] + 1] == (b"," if i < len(msgs) - 1 else b"]")


@settings(max_examples=150, deadline=None)
@given(messages, shells, st.booleans())
def test_every_located_span_reserializes_to_exactly_its_bytes(msgs, shell, messages_first):
    raw, doc = body(msgs, shell, messages_first)
    layout = locate(raw, doc, None)
    assert layout is not None and layout.reused == 0
    assert_proven(raw, doc, layout)
    assert round_trips_by_layout(raw, doc, layout, round_trips) is round_trips(raw, doc) is True


@settings(max_examples=150, deadline=None)
@given(messages, messages, shells)
def test_a_layout_built_on_the_previous_body_is_the_one_built_from_scratch(first, added, shell):
    raw1, doc1 = body(first, shell)
    prev = LaidOutBody(raw1, locate(raw1, doc1, None))
    raw2, doc2 = body(first + added, shell)  # the next request: same history, more messages
    got = locate(raw2, doc2, prev)
    fresh = locate(raw2, doc2, None)
    assert got is not None and fresh is not None
    assert (got.ends, got.sizes, got.hashes) == (fresh.ends, fresh.sizes, fresh.hashes)
    assert got.reused == len(first) - 1  # everything through the previous second-to-last message
    assert_proven(raw2, doc2, got)


@settings(max_examples=100, deadline=None)
@given(st.lists(message, min_size=3, max_size=6), message, shells)
def test_a_changed_history_reuses_nothing_and_is_still_proven(msgs, other, shell):
    raw1, doc1 = body(msgs, shell)
    prev = LaidOutBody(raw1, locate(raw1, doc1, None))
    changed = [other] + msgs[1:] + [other]
    raw2, doc2 = body(changed, shell)
    got = locate(raw2, doc2, prev)
    assert got is not None
    if dumps(other) != dumps(msgs[0]):
        assert got.reused == 0
    assert_proven(raw2, doc2, got)


def test_the_messages_may_come_first_or_after_the_rest_of_the_document():
    msgs = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]
    for first in (True, False):
        raw, doc = body(msgs, {"model": "m", "system": "s"}, messages_first=first)
        assert_proven(raw, doc, locate(raw, doc, None))


def test_bytes_the_codec_would_not_write_are_never_laid_out():
    msgs = [{"role": "user", "content": "héllo"}, {"role": "assistant", "content": "ok"}]
    raw, doc = body(msgs)
    assert locate(raw, doc, None) is not None
    spaced = raw.replace(b'"role":"assistant"', b'"role": "assistant"')
    assert locate(spaced, loads(spaced), None) is None
    escaped = raw.replace("é".encode(), b"\\u00e9")  # same document, not the codec's bytes
    assert loads(escaped) == doc and locate(escaped, loads(escaped), None) is None
    # the doc says one thing, the bytes another: the offsets are not trusted
    assert locate(raw, {"messages": [{"role": "user", "content": "hello"}, msgs[1]]}, None) is None
    # the right messages, but the bytes end before the closing bracket
    assert locate(raw[: raw.rindex(b"]")], doc, None) is None


def test_a_nested_messages_key_before_the_real_one_is_not_taken_for_it():
    """Regression: locate took the first ``"messages":[`` in the bytes, nested or not, and
    proved the offsets of a copy of the messages instead of the messages themselves."""
    msgs = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]
    raw, doc = body(msgs, {"model": "m", "metadata": {"messages": msgs}})
    layout = locate(raw, doc, None)
    assert layout is not None and raw.find(MESSAGES_KEY) < layout.ends[0] - layout.sizes[0] - len(MESSAGES_KEY)
    assert raw[: layout.ends[0] - layout.sizes[0]].endswith(b'},"messages":[')  # the top-level key
    assert_proven(raw, doc, layout)
    assert round_trips_by_layout(raw, doc, layout, lambda r, d: "full") is True  # proven by the layout alone
    deep, ddoc = body(msgs, {"a": [{"b": {"messages": msgs[:1]}}, "]}\\\"messages\\\":["]})
    assert_proven(deep, ddoc, locate(deep, ddoc, None))
    in_a_key, kdoc = body(msgs, {'x"messages': msgs})  # the bytes hold '"x\\"messages":[', inside a key
    assert b'"messages":[' in in_a_key[: in_a_key.index(b',"messages":[')]
    klayout = locate(in_a_key, kdoc, None)
    assert_proven(in_a_key, kdoc, klayout)
    assert klayout.ends[0] - klayout.sizes[0] == in_a_key.index(b',"messages":[') + len(b',"messages":[')
    nested_only = dumps({"metadata": {"messages": msgs}})
    assert locate(nested_only, {"messages": msgs}, None) is None  # no top-level messages in these bytes


def test_a_body_without_messages_has_no_layout():
    assert locate(b'{"model":"m"}', {"model": "m"}, None) is None
    assert locate(b'{"messages":[]}', {"messages": []}, None) is None
    assert locate(b'[1]', [1], None) is None
    assert locate(b'{"messages":"x"}', {"messages": "x"}, None) is None
    doc = {"messages": [{"role": "user", "content": "a"}]}
    assert locate(b'{"msgs":[{"role":"user","content":"a"}]}', doc, None) is None  # no messages key in the bytes


def test_the_head_is_the_body_through_the_second_to_last_message():
    msgs = [{"role": "user", "content": str(i)} for i in range(3)]
    raw, doc = body(msgs)
    layout = locate(raw, doc, None)
    head = head_of(raw, layout)
    assert head.endswith(dumps(msgs[1])) and raw.startswith(head)
    assert head == LaidOutBody(raw, layout).head()
    one_raw, one_doc = body(msgs[:1])
    assert head_of(one_raw, locate(one_raw, one_doc, None)) == b""


def test_repeats_compares_the_prefix_and_refuses_a_body_no_longer_than_it():
    msgs = [{"role": "user", "content": str(i)} for i in range(4)]
    raw, doc = body(msgs)
    prev = LaidOutBody(raw, locate(raw, doc, None))
    longer, _ = body(msgs + [{"role": "assistant", "content": "more"}])
    assert repeats(longer, prev, 3) and repeats(longer, prev, 1)
    cut_short = raw[: prev.layout.ends[2]]
    assert not repeats(cut_short, prev, 3)  # exactly as long as the prefix: nothing after it
    other, _ = body([{"role": "user", "content": "x"}] + msgs[1:] + [{"role": "user", "content": "y"}])
    assert not repeats(other, prev, 3) and not repeats(other, prev, 1)


def test_a_single_message_previous_body_gives_no_reuse():
    one_raw, one_doc = body([{"role": "user", "content": "a"}])
    prev = LaidOutBody(one_raw, locate(one_raw, one_doc, None))
    raw, doc = body([{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}])
    got = locate(raw, doc, prev)
    assert got is not None and got.reused == 0
    assert_proven(raw, doc, got)


def test_the_layout_check_falls_back_to_the_full_one_when_it_proves_nothing():
    msgs = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]
    raw, doc = body(msgs, {"model": "m", "max_tokens": 5})
    layout = locate(raw, doc, None)
    calls = []

    def full(r, d):
        calls.append((r, d))
        return "full says"

    assert round_trips_by_layout(raw, doc, layout, full) is True and not calls
    assert round_trips_by_layout(raw, doc, None, full) == "full says"
    short = Layout(layout.ends[:1], layout.sizes[:1], layout.hashes[:1])  # not this document's layout
    assert round_trips_by_layout(raw, doc, short, full) == "full says"
    shifted = Layout([e + 1 for e in layout.ends], layout.sizes, layout.hashes)  # no '[' where it says
    assert round_trips_by_layout(raw, doc, shifted, full) == "full says"
    # the shell differs from the codec's bytes (a space after a colon outside the messages)
    spaced = raw.replace(b'"max_tokens":', b'"max_tokens": ')
    assert round_trips_by_layout(spaced, loads(spaced), locate(spaced, loads(spaced), None), full) == "full says"
    # a shell the codec cannot write at all
    odd = {**doc, "x": {1, 2}}
    assert round_trips_by_layout(raw, odd, layout, full) == "full says"
    assert len(calls) == 5


def test_the_marker_in_the_shell_itself_is_not_taken_for_the_messages():
    msgs = [{"role": "user", "content": "a"}]
    raw, doc = body(msgs, {"model": "\u0000scalpel-messages\u0000"}, messages_first=True)
    layout = locate(raw, doc, None)
    assert layout is not None
    assert round_trips_by_layout(raw, doc, layout, lambda r, d: "full") == "full"


def test_the_key_it_looks_for_is_the_codecs_spelling():
    assert MESSAGES_KEY in dumps({"messages": [1]})
