"""``bench/parallel.py``: sequences replayed on several processes come back in order, the same figures."""

from __future__ import annotations

import dataclasses
import os

import pytest

from scalpel_desktop.accounting.prices import PriceTable
from scalpel_desktop.bench import parallel
from scalpel_desktop.bench.reader import read_corpus
from scalpel_desktop.bench.replay import replay_corpus
from tests.bench.transcripts import simple_session

needs_fork = pytest.mark.skipif(not parallel.can_fork(), reason="no fork on this platform")


def square_or_fail(i: int) -> tuple[int, int]:
    if i == 3:
        raise ValueError("job 3 breaks")
    return i * i, os.getpid()


@needs_fork
def test_results_come_back_in_order_a_failure_in_its_place_from_other_processes():
    seen = []
    got = parallel.run_all(square_or_fail, 6, jobs=2, weights=[1, 5, 2, 9, 3, 4],
                           progress=lambda done, n: seen.append((done, n)))
    assert got[3] is parallel.FAILED
    assert [g[0] for i, g in enumerate(got) if i != 3] == [0, 1, 4, 16, 25]
    assert {g[1] for i, g in enumerate(got) if i != 3} - {os.getpid()}  # they ran in workers
    assert seen == [(k, 6) for k in range(1, 7)]


def test_one_job_runs_here_in_order():
    seen = []
    got = parallel.run_all(square_or_fail, 5, jobs=1, progress=lambda done, n: seen.append(done))
    assert got[3] is parallel.FAILED and [g[0] for i, g in enumerate(got) if i != 3] == [0, 1, 4, 16]
    assert {g[1] for i, g in enumerate(got) if i != 3} == {os.getpid()}
    assert seen == [1, 2, 3, 4, 5]


def test_default_jobs_is_one_per_usable_core_at_most_four():
    assert 1 <= parallel.default_jobs() <= 4


@needs_fork
def test_a_corpus_replayed_on_two_processes_gives_the_figures_of_one(tmp_path):
    for i, (turns, gap) in enumerate([(12, None), (20, 10), (8, 4), (16, 12)]):
        simple_session(tmp_path / "p" / f"s{i}.jsonl", turns=turns, gap_at=gap, gap=4000.0, big=30_000)
    files = read_corpus(tmp_path)
    prices = PriceTable.builtin()
    from scalpel_desktop.bench import stage_driver

    stage_driver._fresh_log_db()  # the parent holds the template connection: the workers must not use it
    one = replay_corpus(files=files, prices=prices, jobs=1)
    two = replay_corpus(files=files, prices=prices, jobs=2)
    assert len(one.sessions) == 4
    assert [dataclasses.asdict(s) for s in one.sessions] == [dataclasses.asdict(s) for s in two.sessions]
    assert one.skipped == two.skipped
