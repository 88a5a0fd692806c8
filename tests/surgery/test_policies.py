"""surgery/policies.py: the policy table, its names and what each policy promises.

What each policy then cuts is the economist's and payback's business
(tests/surgery/test_economist.py); here: the table matches the ``policy``
setting, an unknown name falls back to the policy that never cuts on a warm
cache, which policies look for dead results, and that the warm ones hand the
payback rule the right ``only_new``.
"""

from __future__ import annotations

import pytest

from scalpel_desktop import config
from scalpel_desktop.surgery import policies
from scalpel_desktop.surgery.policies import POLICIES, Cold, Death, Off, Payback, Policy, policy_named


def test_the_table_holds_exactly_the_policies_the_setting_allows():
    assert set(POLICIES) == set(config.KEYS["policy"].choices)
    assert all(p.name == name for name, p in POLICIES.items())
    assert config.KEYS["policy"].default in POLICIES


@pytest.mark.parametrize("name, kind", [("off", Off), ("cold", Cold), ("death", Death), ("payback", Payback)])
def test_each_name_gives_its_policy(name, kind):
    assert type(policy_named(name)) is kind


@pytest.mark.parametrize("name", ["", "COLD", "warm", "death ", None, 3])
def test_an_unknown_name_is_cold_the_one_that_never_cuts_on_a_warm_cache(name):
    pol = policy_named(name)
    assert pol is POLICIES["cold"]
    assert pol.cuts and not pol.warm


def test_which_policies_cut_and_which_cut_on_a_warm_cache():
    assert {n for n, p in POLICIES.items() if p.cuts} == {"cold", "death", "payback"}
    assert {n for n, p in POLICIES.items() if p.warm} == {"death", "payback"}


@pytest.mark.parametrize("results_from_break, keep_recent", [(0, 0), (0, 3), (3, 3), (4, 3), (10, 0)])
def test_looking_for_dead_results(results_from_break, keep_recent):
    cold_may_cut = results_from_break > keep_recent  # some result at or after the break is not protected
    assert POLICIES["cold"].looks_for_dead(results_from_break, keep_recent) is cold_may_cut
    assert POLICIES["off"].looks_for_dead(results_from_break, keep_recent) is False
    # a warm cut may be worth it whatever the break holds
    assert POLICIES["death"].looks_for_dead(results_from_break, keep_recent) is True
    assert POLICIES["payback"].looks_for_dead(results_from_break, keep_recent) is True


def test_the_cold_ones_have_no_warm_plan():
    for pol in (Policy(), Off(), Cold()):
        assert pol.warm_plan(object(), object(), [object()], [], 0, None, {}, lambda m: None) is None


@pytest.mark.parametrize("name, only_new", [("payback", False), ("death", True)])
def test_the_warm_ones_ask_the_payback_rule_with_their_only_new(monkeypatch, name, only_new):
    calls = []
    planned = object()

    def payback_plan(*args, **kwargs):
        calls.append((args, kwargs))
        return planned

    monkeypatch.setattr(policies, "payback_plan", payback_plan)
    args = ("shape", "brk", ["cand"], ["free"], 2000, "conv", {"s": 1}, len, "history")
    assert policy_named(name).warm_plan(*args, "budget") is planned
    assert calls == [(args, {"only_new": only_new, "budget": "budget"})]  # the user's risk budget handed on
