"""emulator/faults.py: faults on demand, by kind, for a number of requests, on a path."""

from __future__ import annotations

import pytest

from scalpel_desktop.emulator.faults import Fault, FaultQueue


@pytest.mark.parametrize("kind, canonical", [
    ("rate_limit", "429"), (429, "429"), ("overloaded", "529"), ("server_error", "500"),
    ("mid_stream_error", "error_event"), ("disconnect", "drop"), ("slow", "slow"),
])
def test_aliases_name_the_same_fault(kind, canonical):
    assert Fault.make(kind).kind == canonical


def test_unknown_kinds_and_options_are_refused_with_the_known_ones():
    with pytest.raises(ValueError, match="unknown fault kind 'teapot'; known: 429, 529"):
        Fault.make("teapot")
    with pytest.raises(ValueError, match=r"unknown fault option\(s\) \['colour'\]"):
        Fault.make("429", colour="red")


def test_error_gives_the_status_type_and_message_with_overrides():
    assert Fault.make("429").error() == (429, "rate_limit_error", "Number of request tokens has exceeded your rate limit.")
    assert Fault.make("529", message="busy").error() == (529, "overloaded_error", "busy")
    assert Fault.make("error_event").error() == (529, "overloaded_error", "Overloaded")  # non-streaming
    assert Fault.make("status", status=418, error_type="teapot_error").error() == (418, "teapot_error",
                                                                                   "Internal server error")


def test_silences_are_normalised_and_as_dict_round_trips():
    f = Fault.make("slow", silences=[["2", "1.5"]], delay=0.1)
    assert f.silences == [(2, 1.5)]
    assert Fault(**f.as_dict()) == f


def test_the_queue_hands_a_fault_out_count_times_on_matching_paths():
    q = FaultQueue()
    q.add(Fault.make("529", count=2, path="/v1/messages"))
    assert q.take("/v1/models") is None
    assert q.take("/v1/messages").kind == "529"
    assert q.take("/v1/messages?beta=true").kind == "529"
    assert q.take("/v1/messages") is None


def test_count_minus_one_lasts_until_cleared_and_faults_go_in_order():
    q = FaultQueue()
    q.add(Fault.make("drop", count=-1))
    q.add(Fault.make("429"))
    assert all(q.take("/v1/chat/completions").kind == "drop" for _ in range(5))
    q.clear()
    assert q.take("/v1/chat/completions") is None


def test_an_eviction_is_left_for_a_messages_request():
    from scalpel_desktop.emulator.faults import Fault, FaultQueue

    q = FaultQueue()
    q.add(Fault.make("evict"))
    assert q.take("/v1/messages/count_tokens", skip=("evict",)) is None  # count_tokens bills no cache
    assert q.take("/v1/messages").kind == "evict" and q.take("/v1/messages") is None
