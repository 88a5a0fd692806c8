"""Where do one session's tokens go? (``scalpel profile``)

For the main sequence of one transcript: the context size over its requests
(real prompt tokens from usage), the tokens by kind in its last request
(inferred system + tools prefix, user text, assistant text, thinking, tool
inputs, tool results by tool: a measured total split by estimate, see
``_split``), its largest tool results, and the dead weight
the doom-span rules find, with what carrying each dead result cost from the
request where it died to the end (at the model's cache-read price, the
cheapest way it could have been carried).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scalpel_desktop.accounting.estimator import estimate_block, model_family
from scalpel_desktop.bench.reader import Sequence, find_sessions, read_file


class ProfileError(ValueError):
    pass


def latest_session(root: Path | None = None) -> Path:
    files = [p for p in find_sessions(root) if not p.name.startswith("agent-") and p.parent.name != "subagents"]
    if not files:
        raise ProfileError("no Claude Code session transcripts found")
    return max(files, key=lambda p: (os.path.getmtime(p), str(p)))


def resolve(target: str | None, root: Path | None = None) -> Path:
    """A file path, a session id (or its prefix), or None for the latest session."""
    if not target:
        return latest_session(root)
    p = Path(target).expanduser()
    if p.is_file():
        return p
    hits = [f for f in find_sessions(root) if f.stem.startswith(target)]
    if not hits:
        raise ProfileError(f"no session file or id matching {target!r}")
    stems = sorted({f.stem for f in hits if not f.stem.startswith("agent-")} or {f.stem for f in hits})
    if target not in stems and len(stems) > 1:
        raise ProfileError(f"session prefix {target!r} is ambiguous ({', '.join(stems[:2])}, ...): "
                           "give more characters")
    hits = [f for f in hits if f.stem == (target if target in stems else stems[0])] or hits
    return sorted(hits, key=lambda f: (len(f.parts), str(f)))[0]


@dataclass
class Profile:
    path: str
    session: str
    model: str
    requests: int
    context: list[int]  # real prompt tokens per request
    by_kind: dict[str, int]
    by_tool: dict[str, int]
    largest: list[dict[str, Any]]
    dead: dict[str, dict[str, float]]  # kind -> {tokens, results, cost_usd}
    prefix_tokens: int
    measured_tokens: int = 0  # the last request's prompt as the provider counted it: what by_kind adds up to
    estimate_scale: float = 1.0  # measured / estimated tokens of the last request's messages (``_split``)

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def profile_file(path: Path, tier: int = 2, prices=None, top: int = 10) -> Profile:
    fr = read_file(path)
    if not fr.sequences:
        raise ProfileError(f"{path} holds no API requests with usage")
    seq = max(fr.sequences, key=lambda s: (s.kind == "main", len(s.requests)))
    return profile_sequence(seq, tier, prices, top)


def profile_sequence(seq: Sequence, tier: int = 2, prices=None, top: int = 10) -> Profile:
    if prices is None:
        from scalpel_desktop.accounting.prices import PriceTable

        prices = PriceTable.load()
    from scalpel_desktop.bench.policies import doom_spans
    from scalpel_desktop.config import KEYS

    last = seq.requests[-1]
    fam = model_family(last.model)
    names: dict[str, str] = {}
    by_kind = {"user_text": 0, "assistant_text": 0, "thinking": 0, "tool_inputs": 0, "tool_results": 0, "other": 0}
    by_tool: dict[str, int] = {}
    results: list[dict[str, Any]] = []
    for ln in last.history:
        for b in ln.blocks:
            t = b.get("type")
            n = estimate_block(b, fam)
            if t == "text":
                by_kind["user_text" if ln.role == "user" else "assistant_text"] += n
            elif t in ("thinking", "redacted_thinking"):
                by_kind["thinking"] += n
            elif t == "tool_use":
                by_kind["tool_inputs"] += n
                names[b.get("id")] = str(b.get("name") or "?")
            elif t == "tool_result":
                by_kind["tool_results"] += n
                tool = names.get(b.get("tool_use_id"), "?")
                by_tool[tool] = by_tool.get(tool, 0) + n
                results.append({"tool_use_id": b.get("tool_use_id"), "tool": tool, "tokens": n})
            else:
                by_kind["other"] += n
    first = seq.requests[0]
    first_hist = sum(estimate_block(b, fam) for ln in first.history for b in ln.blocks)
    measured = last.usage.prompt_tokens
    prefix = min(measured, max(0, first.usage.prompt_tokens - first_hist))
    by_kind, scale = _split(by_kind, measured - prefix)
    if scale < 1.0:  # the tools' and the results' figures are scaled as their kind was
        by_tool = _scaled(by_tool, by_kind["tool_results"])
        for r in results:
            r["tokens"] = round(r["tokens"] * scale)
    by_kind = {"prefix (system + tools, inferred)": prefix, **by_kind}
    largest = sorted(results, key=lambda r: (-r["tokens"], str(r["tool_use_id"])))[:top]
    # dead weight: when each result died, and what carrying it to the end cost at the read price
    cfg = {k: v.default for k, v in KEYS.items()}
    died: dict[str, tuple[int, str, int]] = {}
    for k, req in enumerate(seq.requests):
        for span in doom_spans(seq, req, cfg, tier):
            died.setdefault(span.tool_use_id, (k, span.kind, span.tokens))
    dead: dict[str, dict[str, float]] = {}
    for tid, (k, kind, tokens) in sorted(died.items()):
        carried = seq.requests[k:]
        cost = sum(tokens * prices.rates(r.model).cache_read for r in carried)
        d = dead.setdefault(kind, {"tokens": 0, "results": 0, "cost_usd": 0.0})
        d["tokens"] += tokens
        d["results"] += 1
        d["cost_usd"] = round(d["cost_usd"] + cost, 6)
    return Profile(str(seq.path), seq.session_id, last.model, len(seq.requests),
                   [r.usage.prompt_tokens for r in seq.requests], by_kind,
                   dict(sorted(by_tool.items(), key=lambda kv: (-kv[1], kv[0]))), largest, dict(sorted(dead.items())),
                   prefix, measured, scale)


REST = "rest (measured, not in the estimate)"


def _split(estimated: dict[str, int], measured: int) -> tuple[dict[str, int], float]:
    """The last request's messages by kind, adding up to ``measured`` (its measured prompt less the
    inferred prefix), and the scale applied to the estimates (1.0, or less when they were over).

    What the split is: the total is measured (the provider's usage counts of the last request);
    how it divides is estimated. The prefix (system + tools) is inferred once, at the first
    request: its measured prompt less the estimated tokens of its messages. The messages of the
    last request are estimated block by block (``accounting/estimator.py``), which is not the
    provider's tokenizer, on a history far larger than the first request's: a few percent off
    either way. Shown as they were, prefix + estimates added up to more than the measured total
    in some sessions. Now estimates above what the measurement leaves the messages are scaled
    down to it (each kind keeps its share); estimates below it leave the difference as its own
    line (``REST``: tokens the provider counted that the transcript does not show, such as the
    reminders Claude Code adds to messages), rather than spreading it over kinds it may not be.
    """
    total = sum(estimated.values())
    if total > measured:
        return _scaled(estimated, measured), measured / total
    return {**estimated, REST: measured - total}, 1.0


def _scaled(parts: dict[str, int], total: int) -> dict[str, int]:
    """``parts`` scaled to sum to ``total`` exactly (largest remainders get the rounding)."""
    est = sum(parts.values())
    if est <= 0:
        return dict(parts)
    raw = {k: v * total / est for k, v in parts.items()}
    out = {k: int(x) for k, x in raw.items()}
    for k in sorted(raw, key=lambda k: (out[k] - raw[k], k))[:total - sum(out.values())]:
        out[k] += 1
    return out
