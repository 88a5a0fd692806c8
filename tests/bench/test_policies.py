"""The bench-only policies: naive and ceiling (every dead result at once), the provider's own clearing."""

from __future__ import annotations

from types import SimpleNamespace

from scalpel_desktop.bench.policies import (
    FIRST_PARTY_KEEP,
    FIRST_PARTY_TRIGGER,
    DoomCuts,
    FirstPartyCuts,
)
from scalpel_desktop.bench.simulate import Stub


def spans_by_request(table):
    return lambda k: [SimpleNamespace(tool_use_id=t) for t in table.get(k, [])]


def test_doom_cuts_keep_every_dead_result_from_the_request_it_died_in():
    cuts = DoomCuts(spans_by_request({0: [], 1: ["a"], 2: ["a", "b"], 3: []}), stub=40, label="naive")
    assert cuts(0, None) == {}
    assert cuts(1, None) == {"a": Stub("naive:a", 40)}
    assert cuts(2, None) == {"a": Stub("naive:a", 40), "b": Stub("naive:b", 40)}
    assert set(cuts(3, None)) == {"a", "b"}  # a cut stays cut


def request_with_results(n):
    line = SimpleNamespace(blocks=[{"type": "tool_result", "tool_use_id": f"t{i}"} for i in range(n)]
                           + [{"type": "text", "text": "x"}, {"type": "tool_result", "tool_use_id": 5}])
    return SimpleNamespace(history=[SimpleNamespace(blocks=[{"type": "text", "text": "go"}]), line])


def test_first_party_clears_all_but_the_most_recent_results_past_the_trigger():
    assert (FIRST_PARTY_TRIGGER, FIRST_PARTY_KEEP) == (100_000, 3)
    prompts = {0: FIRST_PARTY_TRIGGER, 1: FIRST_PARTY_TRIGGER + 1}
    fp = FirstPartyCuts(seq=None, prompt=prompts.get, stub=12)
    req = request_with_results(5)
    assert fp(0, req) == {}  # at the trigger: not past it
    assert fp(1, req) == {"t0": Stub("cleared", 12), "t1": Stub("cleared", 12)}


def test_first_party_with_no_more_results_than_it_keeps_clears_nothing():
    fp = FirstPartyCuts(seq=None, prompt=lambda k: 10**6, stub=12, keep=3)
    assert fp(0, request_with_results(3)) == {}
    assert list(FirstPartyCuts(None, lambda k: 10**6, 12, keep=0)(0, request_with_results(2))) == ["t0", "t1"]
