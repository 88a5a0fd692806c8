"""How well do token estimates match the provider's counts? (``scalpel accuracy``)

Samples (``bench/calibrate.py``): the growth of the real prompt between two
consecutive requests of a sequence, against the content the transcript shows
was added. Two estimators are scored on the same samples:

* ``calibrated``: ``accounting/estimator.py`` (chars per token by kind and
  tokenizer generation, a per-block overhead, and the tokens per turn the
  client adds without writing them down);
* ``chars/4``: the plain rule, characters / 4.

Scores: the weighted error (sum |estimate - real| / sum real) and the bias
(sum (estimate - real) / sum real), per model family and overall.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from scalpel_desktop.accounting.estimator import estimate_chars, hidden_per_turn
from scalpel_desktop.bench.calibrate import Sample, corpus_samples


@dataclass
class Score:
    family: str
    samples: int
    real_tokens: int
    calibrated_error_pct: float
    calibrated_bias_pct: float
    chars4_error_pct: float
    chars4_bias_pct: float

    def as_dict(self) -> dict:
        return {k: (round(v, 3) if isinstance(v, float) else v) for k, v in self.__dict__.items()}


def calibrated(s: Sample) -> float:
    return estimate_chars(s.chars, s.blocks, s.family) + hidden_per_turn(s.family)


def chars4(s: Sample) -> float:
    return sum(s.chars.values()) / 4.0


def score(family: str, samples: list[Sample]) -> Score:
    real = sum(s.tokens for s in samples) or 1
    ce = sum(abs(calibrated(s) - s.tokens) for s in samples)
    cb = sum(calibrated(s) - s.tokens for s in samples)
    qe = sum(abs(chars4(s) - s.tokens) for s in samples)
    qb = sum(chars4(s) - s.tokens for s in samples)
    return Score(family, len(samples), real, 100 * ce / real, 100 * cb / real, 100 * qe / real, 100 * qb / real)


def accuracy(root: Path | None) -> list[Score]:
    """One score per model family (sorted), then ``all``."""
    samples = corpus_samples(root)
    fams = sorted({s.family for s in samples})
    out = [score(f, [s for s in samples if s.family == f]) for f in fams]
    if samples:
        out.append(score("all", samples))
    return out
