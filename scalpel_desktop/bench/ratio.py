"""Each sequence's own tokens per byte, measured from its usage counts.

A request's prompt total (input + cache creation + cache read) is exact. Between
two consecutive requests of a sequence whose history only grew, the total grew
by the tokens of the lines added (the previous answer, the new tool results or
prompt) plus whatever the client added without writing it down (reminders,
attachments). So for each such step::

    delta_prompt = tokens_per_byte * delta_bytes + per_turn

and the two numbers are fitted per sequence by least absolute deviations (a
turn with a large hidden attachment does not drag the slope; the fit itself is
``accounting/token_ratio.py``, shared with the live proxy's calibration). Bytes are the
compact JSON of each content block as the client sends it. Image and document
blocks count 0 bytes: their tokens follow the picture, not its base64 text, and
go to the request's hidden part (``bench/simulate.py``).

Nothing here is fitted on a corpus: a sequence with fewer than ``MIN_FIT`` steps
(a short subagent, say) takes the slope pooled over the sequences of the same
replay that fitted their own (the user's own data, weighted by bytes); only
when none did, the ratio of its own sums (hidden content included, so it leans
high). The error bound reported is the weighted mean absolute error of the
prediction on the sequence's own steps (for a pooled one: the pool's).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from scalpel_desktop.accounting.token_ratio import MIN_FIT
from scalpel_desktop.accounting.token_ratio import fit_error_pct as _err
from scalpel_desktop.accounting.token_ratio import lad as _lad
from scalpel_desktop.bench.reader import Line, Sequence
from scalpel_desktop.wire.jsoncodec import dumps

_OPAQUE = ("image", "document")


@dataclass(frozen=True)
class Ratio:
    tokens_per_byte: float
    per_turn: float  # tokens per step the transcript does not show (the fit's intercept)
    steps: int  # usage deltas it was measured on
    method: str  # "fit" | "sum" | "pooled"
    error_pct: float  # weighted mean absolute error of the prediction on those steps
    delta_tokens: int = 0  # sums behind it (for pooling)
    delta_bytes: int = 0

    def tokens(self, nbytes: int) -> int:
        return int(round(nbytes * self.tokens_per_byte))


def block_bytes(block: Any) -> int:
    """Bytes of one content block as sent (compact JSON); 0 for an image or document."""
    if isinstance(block, dict):
        t = block.get("type")
        if t in _OPAQUE:
            return 0
        if t == "tool_result" and isinstance(block.get("content"), list) and any(
                isinstance(b, dict) and b.get("type") in _OPAQUE for b in block["content"]):
            kept = [b for b in block["content"] if not (isinstance(b, dict) and b.get("type") in _OPAQUE)]
            return len(dumps(dict(block, content=kept)))
    return len(dumps(block))


class ByteCounter:
    """Bytes per transcript line (cached: a line object is shared by every request holding it).

    Keyed by the line's ``id``, so each entry keeps its line alive: a line freed while its entry
    stayed would let a new line of another sequence take its id, and its byte counts (a counter
    shared across sequences measured the next one with the last one's counts)."""

    def __init__(self) -> None:
        self._blocks: dict[int, tuple[Line, list[int]]] = {}
        self._steps: dict[int, tuple[Sequence, list]] = {}  # id(sequence) -> (it, its steps): see steps()

    def blocks(self, ln: Line) -> list[int]:
        got = self._blocks.get(id(ln))
        if got is None:
            got = self._blocks[id(ln)] = (ln, [block_bytes(b) for b in ln.blocks])
        return got[1]

    def line(self, ln: Line) -> int:
        return sum(self.blocks(ln))


def steps(seq: Sequence, counter: ByteCounter) -> list[tuple[int, int]]:
    """(delta bytes, delta prompt tokens) for every request whose history extends the previous one's.
    Found once per sequence and counter (a replay measures each sequence twice: for the pooled
    slope, then with it); the list is the counter's: not to be changed."""
    got = counter._steps.get(id(seq))
    if got is not None and got[0] is seq:
        return got[1]
    out: list[tuple[int, int]] = []
    reqs = seq.requests
    for prev, cur in zip(reqs, reqs[1:]):
        ph, ch = prev.history, cur.history
        if len(ch) < len(ph) or any(a is not b for a, b in zip(ph, ch)):
            continue  # compaction, rewind: not a pure growth step
        db = sum(counter.line(ln) for ln in ch[len(ph):])
        dp = cur.usage.prompt_tokens - prev.usage.prompt_tokens
        if db > 0 and cur.usage.prompt_tokens > 0 and prev.usage.prompt_tokens > 0:
            out.append((db, dp))
    counter._steps[id(seq)] = (seq, out)  # (held: its id stays its own)
    return out


def measure(seq: Sequence, counter: ByteCounter, pooled: Ratio | None = None) -> Ratio:
    pts = steps(seq, counter)
    sb = sum(b for b, _ in pts)
    sp = sum(p for _, p in pts)
    if len(pts) >= MIN_FIT:
        r, c = _lad(pts)
        if r > 0:
            return Ratio(r, c, len(pts), "fit", _err(pts, r, c), sp, sb)
    if pooled is not None:
        return Ratio(pooled.tokens_per_byte, pooled.per_turn, len(pts), "pooled", pooled.error_pct, sp, sb)
    if pts and sp > 0 and sb > 0:
        return Ratio(sp / sb, 0.0, len(pts), "sum", _err(pts, sp / sb, 0.0), sp, sb)
    return Ratio(0.25, 0.0, 0, "default", 100.0, 0, 0)  # nothing measured anywhere: 4 bytes a token, unbounded


def pool(ratios: Iterable[Ratio]) -> Ratio | None:
    """The fitted slopes of a replay's sequences, weighted by the bytes they were measured on:
    the user's own data, for the sequences too short to fit their own."""
    rs = [r for r in ratios if r.method == "fit" and r.delta_bytes > 0]
    if not rs:
        return None
    b = sum(r.delta_bytes for r in rs)
    slope = sum(r.tokens_per_byte * r.delta_bytes for r in rs) / b
    turn = sum(r.per_turn * r.delta_bytes for r in rs) / b
    err = sum(r.error_pct * r.delta_bytes for r in rs) / b
    return Ratio(slope, turn, sum(r.steps for r in rs), "pooled", err, sum(r.delta_tokens for r in rs), b)


__all__ = ["MIN_FIT", "ByteCounter", "Ratio", "block_bytes", "measure", "pool", "steps"]
