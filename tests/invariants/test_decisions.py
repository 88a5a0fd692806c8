"""DECISIONS AS THE BYTES SHOW THEM: ``sent != received`` exactly when the decision names a change.

Over the randomized agent sessions (``agent_sessions.generate``), sent through
the surgery pipeline with the cold policy (and across a restart, where every
earlier cut is replayed from the surgery log):

* a request's bytes sent differ from the bytes received if and only if its
  decision names a change (``decisions.is_change``); ``unchanged`` always means
  the very same bytes;
* the changes it names are the ones its bytes show: ``cut`` exactly when new
  stubs went out, ``replayed`` exactly when stubs of earlier cuts did;
* the ledger row says the same (``pipeline/record.build_row``).
"""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from scalpel_desktop.decisions import changes_of, is_change
from scalpel_desktop.pipeline.record import build_row
from scalpel_desktop.surgery.doom import is_stub
from scalpel_desktop.wire.formats import view_for
from scalpel_desktop.wire.jsoncodec import loads

from tests.invariants.agent_sessions import generate
from tests.invariants.harness import COLD, run_session
from tests.invariants.test_cost import EXAMPLES, PROFILE, RANDOM

import random


def _stub_ids(body: bytes) -> set[str]:
    view = view_for("messages", loads(body))
    return {r.id for r in view.tool_results if is_stub(r.content)} if view is not None else set()


def _check(run) -> dict[str, int]:
    seen: dict[str, int] = {}
    for ex in run.exchanges:
        label = ex.decision.label
        seen[label] = seen.get(label, 0) + 1
        changed = ex.body_to_send() != ex.request.body
        assert changed == is_change(label), (label, ex.decision.reason)
        assert build_row(ex)["decision"] == label
        if not changed:
            continue
        stubs = {tid: kind for tid, _, _, kind in (ex.surgery.stubs if ex.surgery else [])}
        assert set(stubs) == _stub_ids(ex.body_to_send()) - _stub_ids(ex.request.body)
        changes = changes_of(label)
        assert ("cut" in changes) == ("new" in stubs.values()), label
        assert ("replayed" in changes) == ("replayed" in stubs.values()), label
    return seen


@PROFILE
@given(seed=st.integers(0, 2**32 - 1), ttl=st.sampled_from(["5m", "1h"]))
def test_sent_differs_from_received_exactly_when_the_decision_names_a_change(seed, ttl):
    session = generate(random.Random(seed), ttl=ttl)
    _check(run_session(session, COLD))


@settings(max_examples=max(3, EXAMPLES // 10), deadline=None, derandomize=not RANDOM)
@given(seed=st.integers(0, 2**32 - 1), later=st.integers(1, 6))
def test_the_same_after_a_restart_where_earlier_cuts_are_replayed(seed, later):
    session = generate(random.Random(seed))
    straight = run_session(session, COLD)
    first_cut = next((i for i, ex in enumerate(straight.exchanges) if "cut" in ex.decision.changes), None)
    restart_at = min(len(session.requests) - 1, (first_cut or 0) + later)
    _check(run_session(session, COLD, restart_at=restart_at))


def test_the_sessions_show_every_surgery_decision():
    """Not vacuous: across a few sessions, cut, replayed and their combination all occur."""
    seen: dict[str, int] = {}
    for seed in range(6):
        for k, v in _check(run_session(generate(random.Random(seed)), COLD)).items():
            seen[k] = seen.get(k, 0) + v
    assert {"cut", "replayed", "unchanged"} <= set(seen), seen
