"""wire/prefix_fold.py: a fold resumed from the previous request's is always the full fold."""

from __future__ import annotations

import hashlib
import operator

from hypothesis import given, settings, strategies as st

from scalpel_desktop.wire.jsoncodec import dumps
from scalpel_desktop.wire.prefix_fold import PrefixFold


def _digests(msgs: list) -> list[bytes]:
    return [hashlib.sha256(dumps(m)).digest()[:16] for m in msgs]


def _fold() -> PrefixFold:
    # An order-sensitive fold (a tuple of what each message holds): any slip of the resume shows.
    return PrefixFold(lambda m: (m["v"],) if m["v"] % 3 else (), operator.add, ())


# Each step: grow by k messages, rewrite message k, drop the last k, send the same again, or another key.
_steps = st.lists(st.tuples(st.sampled_from(["grow", "rewrite", "shrink", "again", "other"]),
                            st.integers(0, 30), st.integers(0, 1000)), min_size=1, max_size=30)


@settings(max_examples=200, deadline=None)
@given(_steps)
def test_the_resumed_fold_is_the_full_fold_however_the_history_moves(steps):
    fold = _fold()
    convs = {"a": [{"v": 1}], "b": [{"v": 2}]}
    key = "a"
    for op, k, v in steps:
        msgs = convs[key]
        if op == "grow":
            msgs = msgs + [{"v": v + i} for i in range(k + 1)]
        elif op == "rewrite":
            msgs = list(msgs)
            msgs[k % len(msgs)] = {"v": v + 1}
        elif op == "shrink":
            msgs = msgs[:max(1, len(msgs) - k)]
        elif op == "other":
            key = "b" if key == "a" else "a"
            msgs = convs[key]
        convs[key] = msgs
        assert fold.value(key, msgs, _digests(msgs)) == fold.full(msgs)


def test_a_growing_history_folds_only_its_new_messages():
    calls = []
    fold = PrefixFold(lambda m: calls.append(m) or m["v"], operator.add, 0)
    msgs = [{"v": i} for i in range(100)]
    assert fold.value("k", msgs, _digests(msgs)) == sum(range(100)) and len(calls) == 100
    grown = msgs + [{"v": 100}, {"v": 101}]
    calls.clear()
    assert fold.value("k", grown, _digests(grown)) == sum(range(102))
    assert len(calls) == 2 and fold.resumed == 1  # the two new ones (the previous last was the same)
    calls.clear()
    assert fold.value("k", grown, _digests(grown)) == sum(range(102)) and len(calls) == 1  # a retry: its last


def test_without_digests_or_a_key_it_folds_everything_and_keeps_nothing():
    fold = _fold()
    msgs = [{"v": i} for i in range(20)]
    want = fold.full(msgs)
    assert fold.value(None, msgs, _digests(msgs)) == want
    assert fold.value("k", msgs, None) == want
    assert fold.value("k", msgs, _digests(msgs)[:-1]) == want  # (not one a message)
    assert fold.value("k", msgs, ["x"] * 20) == want  # (not digests)
    assert fold.value("k", "not a list", None) == ()
    assert fold.value("k", [], []) == ()
    assert fold.resumed == 0


def test_it_keeps_at_most_size_conversations():
    fold = PrefixFold(lambda m: m["v"], operator.add, 0, size=3)
    for key in range(10):
        msgs = [{"v": key}, {"v": 1}]
        fold.value(key, msgs, _digests(msgs))
    assert len(fold._items) == 3 and set(fold._items) == {7, 8, 9}
