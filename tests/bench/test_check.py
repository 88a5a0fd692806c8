"""Checking the judge: the simulator's unmodified arm against the real bill, per session and in all."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from scalpel_desktop.bench.check import TARGET_PCT, check_report


def session(name, real, off):
    return SimpleNamespace(name=name, real_cost=real, costs={"off": off, "cold": off / 2})


def test_the_error_is_signed_and_summed_over_sessions_before_it_is_taken():
    rep = check_report([session("a", 10.0, 10.5), session("b", 30.0, 29.5)])
    assert rep.real_cost == 40.0 and rep.simulated_cost == 40.0
    assert rep.error_pct == 0.0 and rep.within_target
    assert [r.error_pct for r in rep.rows] == [pytest.approx(5.0), pytest.approx(-100 * 0.5 / 30)]


def test_the_target_is_inclusive_and_the_off_target_sessions_are_listed():
    assert TARGET_PCT == 2.0
    assert check_report([session("a", 100.0, 102.0)]).within_target
    rep = check_report([session("far", 100.0, 97.0), session("near", 100.0, 100.5)])
    assert rep.within_target and rep.error_pct == pytest.approx(-1.25)  # in all within; one session is not
    d = rep.as_dict()
    assert d["off_target_sessions"] == [{"session": "far", "real_cost_usd": 100.0, "simulated_cost_usd": 97.0,
                                         "error_pct": -3.0}]
    assert d["target_pct"] == 2.0 and d["error_pct"] == -1.25
    assert not check_report([session("a", 100.0, 102.01)]).within_target


def test_the_median_is_of_absolute_errors():
    rep = check_report([session("a", 100.0, 90.0), session("b", 100.0, 101.0), session("c", 100.0, 97.0)])
    assert rep.as_dict()["abs_error_pct_by_session_median"] == 3.0
    even = check_report([session("a", 100.0, 90.0), session("b", 100.0, 101.0)])
    assert even.as_dict()["abs_error_pct_by_session_median"] == 5.5  # not the upper middle, 10


def test_a_free_session_has_no_error_and_no_sessions_no_figures():
    rep = check_report([session("free", 0.0, 0.01)])
    assert rep.rows[0].error_pct == 0.0
    empty = check_report([])
    assert empty.as_dict()["abs_error_pct_by_session_median"] == 0.0 and empty.within_target
