"""Economist.forget_cold: what the economist keeps of a conversation whose every cache expired is let
go of, and no later decision can tell (the natural break, the plan, the bytes sent)."""

from __future__ import annotations

import pytest

from scalpel_desktop.surgery.plan import EntryMark
from tests.surgery.economist_shapes import HAIKU, KEY, OPUS, econ, sent, shape, units
from scalpel_desktop.bench.stage_driver import SequenceBodies
from tests.surgery.economist_shapes import APPEND_ONLY
from tests.surgery.test_ghost import _chain, _send, _sequences

OTHER = ("session-2", "")


def _both(**settings):
    """Two economists fed the same: one lets go at every chance, one never."""
    return econ(**settings), econ(**settings)


def test_a_conversation_whose_caches_expired_is_let_go_of_and_breaks_as_before():
    kept, forgetting = _both()
    for e in (kept, forgetting):
        sent(e, shape(units(50), at=0, ttl="5m"), finished_after=2.0)
        sent(e, shape(units(8, "h"), at=1.0, model=HAIKU, ttl="5m"), finished_after=1.0)
    assert forgetting.forget_cold(2.0 + 300 + 30, every_s=0) == 0  # at the margin: maybe live
    assert forgetting.forget_cold(2.0 + 300 + 30.5, every_s=0) == 1
    conv = forgetting.conversations[KEY]
    assert conv.models == {OPUS: [], HAIKU: []} and conv.entries == {} and conv.cold_since == 332.0
    assert conv.turns == 2 and forgetting.sent_hashes(KEY) is None
    for model in (OPUS, HAIKU):  # each model's next request: the break the whole state gives
        later = shape(units(52), at=400.0, model=model)
        assert forgetting.natural_break(later) == kept.natural_break(later)
        assert forgetting.natural_break(later).reason == "ttl-expired"
    new_model = shape(units(52), at=400.0, model="claude-sonnet-4-5")
    assert forgetting.natural_break(new_model) == kept.natural_break(new_model)  # never seen: warm until known


def test_nothing_is_let_go_of_while_a_cache_may_be_live():
    e = econ()
    sent(e, shape(units(10), at=0, ttl="5m"))
    sent(e, shape(units(10), at=0, key=OTHER, ttl="1h"))
    e.record_sent(shape(units(10, "f"), at=0, key=("in-flight", "")))  # its response never came back
    assert e.forget_cold(2.0 + 300 + 31, every_s=0) == 1  # the 5m one only
    assert e.conversations[OTHER].models[OPUS] and e.conversations[("in-flight", "")].models[OPUS]
    assert e.forget_cold(10 ** 6, every_s=0) == 1  # the 1h one; the one in flight is never let go of
    # An entry mark that may still be live keeps its conversation whole.
    e2 = econ()
    sent(e2, shape(units(10), at=0, ttl="5m"))
    e2.conversations[KEY].entries[OPUS].append(EntryMark(5, 0.0, 3600.0, 1, 99, confirmed=True))
    assert e2.forget_cold(400.0, every_s=0) == 0 and e2.conversations[KEY].models[OPUS]


def test_a_sweep_runs_at_most_once_a_minute_and_a_clock_set_back_is_warm_until_known():
    e = econ()
    sent(e, shape(units(10), at=0))
    assert e.forget_cold(10.0) == 0  # nothing expired, but the sweep ran
    assert e.forget_cold(69.0) == 0 and e.forget_cold(400.0) == 1
    sent(e, shape(units(10), at=400.0, key=OTHER))
    assert e.forget_cold(459.0 + 400) == 1  # a minute on: the other one, expired by then
    assert e.forget_cold(900.0) == 0  # within a minute of the last sweep: not run
    assert e.natural_break(shape(units(12), at=333.0)).reason == "ttl-expired"
    back = shape(units(12), at=331.0)  # dated before its caches all expired: the clock went back
    assert e.natural_break(back).reason == "model-first-seen"


@pytest.mark.parametrize("policy", ["death", "cold"])
def test_on_real_sessions_letting_go_changes_no_decision_and_no_byte(tmp_path, monkeypatch, policy):
    """Six real sessions at once, each on its own clock shifted to start a minute after the one
    before, their requests in the order they arrive (many gaps past the TTL): a pipeline whose
    economist lets go at every answer against one that never does."""
    kept, kstage = _chain(tmp_path, "kept", False, policy)
    forgetting, fstage = _chain(tmp_path, "forgetting", False, policy)
    monkeypatch.setattr(kstage.economist, "forget_cold", lambda now, every_s=0: 0)
    forgot = []
    real = fstage.economist.forget_cold
    monkeypatch.setattr(fstage.economist, "forget_cold", lambda now, every_s=0: forgot.append(real(now, 0)))
    events = []
    for i, seq in enumerate(_sequences(6)):
        shift = 60.0 * i - seq.requests[0].ts
        bodies = SequenceBodies(seq, {"tier": 2}, 2, markers=APPEND_ONLY)
        events += [(req.ts + shift, req.ts_done + shift, seq.name, k, req, bodies) for k, req in enumerate(seq.requests)]
    events.sort(key=lambda e: e[:4])
    for at, done, name, k, req, bodies in events:
        body = bodies.doc(k)[0]
        a = _send(kept, body, at, done, req.usage)
        b = _send(forgetting, body, at, done, req.usage)
        assert b.body_to_send() == a.body_to_send(), (name, k)
        assert (b.decision.action, b.decision.figures) == (a.decision.action, a.decision.figures), (name, k)
    assert len(events) >= 100 and sum(forgot) >= 3, (len(events), sum(forgot))
    expired = [c for c in fstage.economist.conversations.values() if c.cold_since is not None]
    assert expired and all(not any(c.models.values()) or c.turns for c in expired)
