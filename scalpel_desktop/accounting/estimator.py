"""Calibrated token estimates: characters per token by content kind and model family.

The emulated upstream bills by a fixed rule (``tokens.rule_tokens``); this
module predicts what the REAL provider counts, for the bench and the
dashboards. Text is sorted into three kinds, because a tokenizer packs them
differently: ``prose`` (natural language), ``code`` (source, numbered file
reads, shell output) and ``json`` (tool inputs, JSON results). Each block also
costs a small fixed overhead (its wrapping in the prompt).

How the table was calibrated (``python -m scalpel_desktop.bench.calibrate
DIR`` reproduces it): in every transcript sequence, consecutive requests whose
histories extend each other give one sample: the growth of the prompt
(input + cache write + cache read, from the real usage) against the content
that was added (the previous response and the new user lines). A robust
(least absolute deviation) fit of ``tokens = sum(chars_kind / cpt_kind) +
overhead * blocks + hidden`` over those samples, per model family, gives the
characters-per-token below; ``hidden`` absorbs what the client adds without
writing it to the transcript (system reminders, file-change notes, teammate
messages) and is not part of a block's estimate. Deferred tools loaded by
ToolSearch count as the declaration each ``tool_reference`` stands for. Families with too few samples share the fit of their tokenizer
generation. ``scalpel accuracy DIR`` prints the resulting error next to a
plain characters / 4.
"""

from __future__ import annotations

import math
import re
from typing import Any

from scalpel_desktop.wire.jsoncodec import dumps

KINDS = ("prose", "code", "json")

# Fitted on ../shared/corpus/transcripts by bench/calibrate.py (see the module
# docstring): chars per token by kind, tokens of wrapping per block, and the
# tokens per turn the client adds without writing them to the transcript (the
# fit's median; the mean is 159 / 512, pulled up by a few large turns in short
# subagent sequences: see bench/calibrate.py).
# gen-2025: Claude 4.x up to 4.6 (901 samples); gen-2026: Opus 4.7 and later,
# whose tokenizer counts more tokens for the same text (76 samples, so its
# characters per token are loose: prose and the per-turn term are collinear).
CALIBRATION: dict[str, dict[str, float]] = {
    "gen-2025": {"prose": 3.06, "code": 3.27, "json": 3.4, "overhead": 3.0, "hidden": 81.0},
    "gen-2026": {"prose": 1.61, "code": 2.52, "json": 2.81, "overhead": 3.0, "hidden": 148.9},
}

_CODE_HINTS = re.compile(r"[{}();=<>\[\]]|^\s{2,}\S|\u2192|^\s*\d+\t", re.M)
_FAMILY = re.compile(r"claude-(?:(\d+)(?:-(\d))?-)?(opus|sonnet|haiku)(?:-(\d+))?(?:-(\d)(?!\d))?")


def model_family(model: str | None) -> str:
    """``claude-sonnet-4-5-20250929`` -> ``sonnet-4.5``; ``claude-3-5-haiku-...`` -> ``haiku-3.5``."""
    if not model:
        return "unknown"
    m = _FAMILY.search(model)
    if not m:
        return "unknown"
    old_major, old_minor, name, major, minor = m.groups()
    if old_major:  # claude-3-5-sonnet style
        return f"{name}-{old_major}" + (f".{old_minor}" if old_minor else "")
    if not major:
        return name
    return f"{name}-{major}" + (f".{minor}" if minor else "")


def classify(text: str) -> str:
    """The content kind of ``text``: ``json``, ``code`` or ``prose``."""
    s = text.lstrip()[:1]
    if s in ("{", "[") and text.rstrip()[-1:] in ("}", "]"):
        return "json"
    sample = text[:4000]
    if not sample:
        return "prose"
    hits = len(_CODE_HINTS.findall(sample))
    lines = sample.count("\n") + 1
    # code: symbols on most lines, or very short "words" (paths, numbers, columns)
    if hits >= max(3, lines * 0.5) or hits / max(1, len(sample)) > 0.02:
        return "code"
    return "prose"


def _table(family: str | None) -> dict[str, float]:
    return CALIBRATION.get(generation(family or ""), CALIBRATION["gen-2025"])


def hidden_per_turn(family: str | None) -> float:
    """Tokens per request the client sends but does not write to the transcript."""
    return _table(family).get("hidden", 0.0)


def estimate(text: str, kind: str | None = None, family: str | None = None) -> int:
    """Estimated real tokens of ``text`` (kind guessed when not given)."""
    if not text:
        return 0
    k = kind or classify(text)
    cpt = _table(family).get(k) or _table(family)["prose"]
    return max(1, round(len(text) / cpt))


def chars_by_kind(block: Any) -> tuple[dict[str, int], int]:
    """Characters of each kind in one content block, and the number of blocks it counts as."""
    out = {"prose": 0, "code": 0, "json": 0}
    if not isinstance(block, dict):
        out["prose"] += len(str(block))
        return out, 1
    t = block.get("type")
    if t == "text":
        text = block.get("text") or ""
        out[classify(text)] += len(text)
    elif t == "thinking":
        out["prose"] += len(block.get("thinking") or "")
    elif t == "redacted_thinking":
        out["prose"] += len(block.get("data") or "") // 4
    elif t == "tool_use":
        out["json"] += len(dumps(block.get("input"))) + len(block.get("name") or "")
    elif t == "tool_result":
        content = block.get("content")
        if isinstance(content, str):
            out[classify(content)] += len(content)
        elif isinstance(content, list):
            for sub in content:
                inner, _ = chars_by_kind(sub)
                for k, v in inner.items():
                    out[k] += v
    elif t == "image":
        out["json"] += IMAGE_TOKENS * 3  # ~1,600 tokens for a typical screenshot
    elif t == "tool_reference":
        # The API expands a reference to a deferred tool into that tool's whole
        # declaration, where the reference sits (ToolSearch results).
        out["json"] += TOOL_REFERENCE_CHARS
    elif t in ("document", "search_result"):
        out["json"] += len(dumps(block))
    else:
        out["json"] += len(dumps(block))
    return out, 1


IMAGE_TOKENS = 1600
# Characters of the tool declaration a ``tool_reference`` block stands for. Fitted
# on the corpus's 8 prompt growths holding ToolSearch results (25 references, all
# Opus 4.7: 1,026 unexplained tokens per reference at 2.86 characters per token);
# Claude Code 2.1.332's real declarations (../shared/corpus/wire) are 639 to 5,688
# characters each.
TOOL_REFERENCE_CHARS = 2900


def estimate_chars(chars: dict[str, int], blocks: int, family: str | None = None) -> float:
    tab = _table(family)
    tokens = blocks * tab.get("overhead", 0.0)
    for k, v in chars.items():
        if v:
            tokens += v / tab[k]
    return tokens


def estimate_block(block: Any, family: str | None = None) -> int:
    """Estimated real tokens of one content block (with its per-block overhead)."""
    chars, n = chars_by_kind(block)
    return max(1, math.ceil(estimate_chars(chars, n, family)))


def generation(family: str) -> str:
    """The tokenizer generation of a family: Opus 4.7 and later count more tokens per character."""
    m = re.match(r"([a-z]+)-(\d+)(?:\.(\d+))?", family or "")
    if not m:
        return "gen-2025"
    major, minor = int(m.group(2)), int(m.group(3) or 0)
    return "gen-2026" if (major, minor) >= (4, 7) else "gen-2025"
