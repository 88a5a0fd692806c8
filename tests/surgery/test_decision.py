"""surgery/decision.py: every path's plan becomes the same ledger decision."""

from __future__ import annotations

from types import SimpleNamespace

from scalpel_desktop.exchange import ApiRequest, Exchange
from scalpel_desktop.surgery.decision import record_decision
from scalpel_desktop.surgery.plan import Plan


def _ex() -> Exchange:
    return Exchange(request=ApiRequest("POST", "/v1/messages", "", "anthropic", "messages", {}, b"{}", 0.0))


def test_replayed_and_new_cuts_are_named_and_counted():
    ex = _ex()
    ex.decision.add("filtered", "tool filter: 1 declaration(s) not sent", 40)  # an earlier stage's change stays
    cuts = [SimpleNamespace(saved_tokens=300), SimpleNamespace(saved_tokens=200)]
    plan = Plan(cut_ids=["a", "b"], reason="free: break at unit 4 (ttl-expired)", rewrite_tokens=7, figures={"x": 1})
    record_decision(ex, plan, replayed=2, cuts=cuts, removed=900, extra={"dead_left": 12})
    d = ex.decision
    assert d.changes == {"filtered", "replayed", "cut"}
    assert d.figures == {"x": 1, "replayed": 2, "new_cuts": 2, "dead_left": 12, "tokens_cut": 500, "rewrite_tokens": 7}
    assert d.tokens_removed == 40 + 900


def test_a_plan_the_surgeon_could_not_carry_out_says_so_and_changes_nothing():
    ex = _ex()
    record_decision(ex, Plan(cut_ids=["a"], reason="free: break at unit 4"), replayed=0, cuts=[], removed=0)
    assert not ex.decision.changes and ex.decision.label == "unchanged"
    assert ex.decision.reason.startswith("surgeon could not cut; free")
    assert ex.decision.figures == {"replayed": 0, "new_cuts": 0}
