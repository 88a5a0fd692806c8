"""The API's request checks answer the same with or without what an earlier check learnt (``known``)."""

from __future__ import annotations

import copy
import random

import pytest

from scalpel_desktop.wire import api_rules
from scalpel_desktop.wire.api_rules import ApiError, validate_messages_body
from tests.invariants.agent_sessions import generate


def _outcome(body, known=None) -> str:
    try:
        validate_messages_body(body, known=known)
        return ""
    except ApiError as e:
        return e.message


def _grown(seed: int) -> list[dict]:
    """Requests of one conversation whose shared messages are the very same objects."""
    reqs = [r.body for r in generate(random.Random(seed)).requests]
    out, prev = [], None
    for body in reqs:
        body = dict(body)
        if prev is not None:
            n = min(len(prev["messages"]), len(body["messages"])) - 1
            same = [p for p, m in zip(prev["messages"][:n], body["messages"][:n]) if p == m]
            body["messages"] = prev["messages"][: len(same)] + body["messages"][len(same):]
        out.append(body)
        prev = body
    return out


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_growing_conversation_is_judged_the_same_with_the_memo(seed):
    known: dict = {}
    for body in _grown(seed):
        assert _outcome(body, known) == _outcome(body)


def test_a_remembered_message_still_meets_the_checks_that_span_messages(monkeypatch):
    bodies = _grown(4)
    body = next(b for b in bodies if sum(1 for m in b["messages"] if m["role"] == "assistant") >= 2)
    known: dict = {}
    assert _outcome(body, known) == "" and known
    calls = []
    real = api_rules._check_message
    monkeypatch.setattr(api_rules, "_check_message", lambda *a: calls.append(a[0]) or real(*a))
    # The same message objects, but a tool_use id now repeated across two of them: refused, as without the memo.
    msgs = list(body["messages"])
    uses = [(i, b) for i, m in enumerate(msgs) if m["role"] == "assistant" and isinstance(m["content"], list)
            for b in m["content"] if b.get("type") == "tool_use"]
    first, (i1, second) = uses[0][1], uses[-1]
    dup = copy.deepcopy(msgs[i1])
    for b in dup["content"]:
        if b.get("type") == "tool_use" and b["id"] == second["id"]:
            b["id"] = first["id"]
    msgs[i1] = dup
    bad = dict(body, messages=msgs)
    with_memo = _outcome(bad, dict(known))
    assert calls and set(calls) <= {i1}  # only the new object was checked on its own
    assert with_memo == _outcome(bad) != ""
