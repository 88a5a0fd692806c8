"""The default policy is the best that made no session dearer on every corpus (issue 11 part 5).

Nothing is fitted, so this must hold on the whole shared corpus and on each of
its independent parts; at tier 2 and tier 1. (The CLI sessions:
``test_cli_sessions.py``; the generated sessions under every reading of the
undocumented cache behaviours: ``tests/invariants/test_variants.py``.)
"""

from __future__ import annotations

import pytest

from scalpel_desktop.bench.reader import read_corpus
from scalpel_desktop.bench.replay import replay_corpus
from scalpel_desktop.config import KEYS
from tests.bench.test_simulate import _halves
from tests.support import corpus_dir

DEFAULT = KEYS["policy"].default


def test_the_default_is_a_shipped_warm_policy():
    assert DEFAULT == "death"


@pytest.mark.parametrize("tier", [2, 1])
def test_the_default_makes_no_session_dearer_on_the_corpus_and_each_part(tier):
    sets = {"whole corpus": read_corpus(corpus_dir("transcripts")), **_halves()}
    for name, files in sets.items():
        res = replay_corpus(files=files, policies=["off", "cold", DEFAULT], tier=tier, hinted=False)
        t, cold = res.policy(DEFAULT), res.policy("cold")
        assert t.sessions_worse == 0, (name, tier, t)
        assert t.saving_usd >= cold.saving_usd - 1e-9, (name, tier)  # never less than the free cuts alone
