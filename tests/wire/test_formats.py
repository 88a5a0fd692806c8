"""The ``view_for`` dispatch: which view reads which endpoint, and None for what it cannot read."""

from __future__ import annotations

import pytest

from scalpel_desktop.wire import formats
from scalpel_desktop.wire.anthropic_view import AnthropicView
from scalpel_desktop.wire.formats import view_for
from scalpel_desktop.wire.openai_chat_view import ChatView
from scalpel_desktop.wire.openai_responses_view import ResponsesView


@pytest.mark.parametrize("endpoint,key,cls", [("messages", "messages", AnthropicView), ("chat", "messages", ChatView),
                                              ("responses", "input", ResponsesView)])
def test_each_endpoint_gets_its_own_view_over_its_history_key(endpoint, key, cls):
    doc = {"model": "m", key: [{"role": "user", "content": "hi"}]}
    v = view_for(endpoint, doc)
    assert type(v) is cls and v.endpoint == endpoint and v.units_key == key
    assert [u.role for u in v.units] == ["user"]


@pytest.mark.parametrize("endpoint,doc", [
    ("count_tokens", {"messages": []}),
    ("other", {"messages": []}),
    ("messages", {"input": []}),  # the history under another format's key
    ("responses", {"messages": []}),
    ("messages", {"messages": "hi"}),
    ("chat", None),
    ("chat", b'{"messages": []}'),
])
def test_none_for_anything_that_is_not_that_format(endpoint, doc):
    assert view_for(endpoint, doc) is None


def test_a_view_that_fails_on_an_odd_shape_gives_no_view_instead_of_an_error(monkeypatch):
    class Fragile(AnthropicView):
        def _index(self, start=0):
            raise KeyError("content")

    monkeypatch.setitem(formats.FORMATS, "messages", (Fragile, "messages"))
    assert view_for("messages", {"messages": [{"role": "user"}]}) is None


def test_an_error_the_views_do_not_expect_is_not_swallowed(monkeypatch):
    class Broken(AnthropicView):
        def _index(self, start=0):
            raise RuntimeError("a bug, not a shape")

    monkeypatch.setitem(formats.FORMATS, "messages", (Broken, "messages"))
    with pytest.raises(RuntimeError):
        view_for("messages", {"messages": []})


def test_the_previous_view_is_shared_for_the_leading_same_objects():
    first = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]
    v1 = view_for("messages", {"messages": first})
    v2 = view_for("messages", {"messages": [*first, {"role": "user", "content": "c"}]}, v1)
    assert v2.reused_units == 2 and v2.units[:2] == v1.units
    assert len(v2.units) == 3
    # a view of another format is never reused
    v3 = view_for("chat", {"messages": [*first]}, v1)
    assert v3.reused_units == 0
