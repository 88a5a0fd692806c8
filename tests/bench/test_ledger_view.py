"""bench/ledger_view.py: a replayed sequence starts with the ledger of the sequences that ended before it."""

from __future__ import annotations

from types import SimpleNamespace

from scalpel_desktop.bench import parallel
from scalpel_desktop.bench.ledger_view import budget_before, waves


def _seq(start, end):
    return SimpleNamespace(requests=[SimpleNamespace(ts=start, ts_done=start), SimpleNamespace(ts=end, ts_done=end)])


def test_waves_put_a_sequence_after_every_one_that_ended_before_it_started():
    seqs = [_seq(0, 10), _seq(5, 20), _seq(15, 30), _seq(40, 50), _seq(41, 45)]
    got = waves(seqs)
    assert got == [[0, 1], [2], [3, 4]]
    done = set()
    for wave in got:
        for i in wave:
            assert all(j in done for j, o in enumerate(seqs) if o.requests[-1].ts_done < seqs[i].requests[0].ts)
        done |= set(wave)


def test_the_budget_is_the_start_plus_what_the_ended_sequences_banked_less_staked():
    seqs = [_seq(0, 10), _seq(5, 20), _seq(30, 40)]
    results = [SimpleNamespace(budget={"payback": (0.5, 0.1)}, bets={"payback": [(5, 2)]}),
               SimpleNamespace(budget={"payback": (0.25, 0.0)}, bets={"payback": []}), parallel.FAILED]
    budgets, bets = budget_before(seqs, seqs[2], results, ["payback"], start_usd=1.0)
    assert abs(budgets["payback"].balance_usd - 1.65) < 1e-12 and bets["payback"] == [(5, 2)]
    budgets, _ = budget_before(seqs, seqs[1], results, ["payback"])  # the first had not ended when it began
    assert budgets["payback"].balance_usd == 0.0 and budgets["payback:hinted"].balance_usd == 0.0
