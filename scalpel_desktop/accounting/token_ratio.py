"""Tokens per byte, measured from the provider's own counts (SPEC 7).

A request's prompt total (input + cache creation + cache read) is exact once
its answer arrives, and the sender knows the bytes it sent. Between two
requests of one conversation whose body grew, the total grew by the tokens of
the bytes added (plus whatever the provider adds per request), so each step
gives a pair ``(delta bytes, delta tokens)`` and::

    delta_tokens = tokens_per_byte * delta_bytes + per_step

is fitted by least absolute deviations (a step with an odd attachment does not
drag the slope). Two users: the live proxy, which converts the bytes a cut or
the tool filter removed into tokens with the conversation's own ratio
(``ConversationRatios``, fed by ``pipeline/calibrate.py``), and the bench
(``bench/ratio.py``), which fits each transcript sequence the same way.

Nothing here is fitted on a corpus. A conversation with fewer than ``MIN_FIT``
pairs takes the slope pooled over this process's other conversations of the
same model that fitted their own (the user's own traffic, weighted by bytes);
when there are none, the request's own prompt total over its own body bytes
(``own_request``: measured too, but it counts the JSON structure as content,
so it leans low, and it has no error bound).

The error bound of a fit is the bytes-weighted mean distance of the per-pair
ratios ``(delta tokens - per_step) / delta bytes`` from the fitted slope, in
percent of it (``spread_pct``); ``fit_error_pct`` is the fit's residual on
its own pairs (what the bench reports).
"""

from __future__ import annotations

import threading
from collections import OrderedDict, deque
from dataclasses import dataclass
from typing import Hashable, Sequence

MIN_FIT = 4  # two parameters: at least twice as many pairs
MAX_PAIRS = 64  # the most recent pairs of a conversation that are kept
MAX_CONVERSATIONS = 512

Pair = tuple[int, int]  # (delta bytes, delta tokens)


# -- the fit ----------------------------------------------------------------------------


def lad(pts: Sequence[Pair], rounds: int = 30) -> tuple[float, float]:
    """Least absolute deviations for p = r*b + c: alternate the two weighted medians."""
    c = 0.0
    r = sum(p for _, p in pts) / max(1, sum(b for b, _ in pts))
    for _ in range(rounds):
        r_new = wmedian([((p - c) / b, b) for b, p in pts])
        c_new = wmedian([(p - r_new * b, 1.0) for b, p in pts])
        if abs(r_new - r) < 1e-9 and abs(c_new - c) < 1e-6:
            r, c = r_new, c_new
            break
        r, c = r_new, c_new
    return r, c


def wmedian(items: list[tuple[float, float]]) -> float:
    items = sorted(items)
    half = sum(w for _, w in items) / 2.0
    acc = 0.0
    for v, w in items:
        acc += w
        if acc >= half:
            return v
    return items[-1][0] if items else 0.0


def fit_error_pct(pts: Sequence[Pair], r: float, c: float) -> float:
    """Weighted mean absolute error of the prediction on the pairs, in % of their tokens."""
    tot = sum(abs(p) for _, p in pts)
    if tot <= 0:
        return 100.0
    return 100.0 * sum(abs(p - (r * b + c)) for b, p in pts) / tot


def spread_pct(pts: Sequence[Pair], r: float, c: float) -> float:
    """Bytes-weighted mean distance of the per-pair ratios from the slope, in % of the slope."""
    tot = sum(b for b, _ in pts)
    if tot <= 0 or r <= 0:
        return 100.0
    return 100.0 * sum(abs((p - c) / b - r) * b for b, p in pts) / tot / r


# -- the live proxy's per-conversation ratios ---------------------------------------------


@dataclass(frozen=True)
class TokenRatio:
    """A conversation's tokens per byte when a request's answer arrived, and how it was obtained."""

    tokens_per_byte: float
    method: str  # fit | pooled | own_request
    pairs: int  # usage pairs behind it (for pooled: the pool's)
    error_pct: float | None  # the bound (``spread_pct``); None for own_request: no bound
    previous_prompt: int | None = None  # the conversation's previous prompt total (usage), if any

    def tokens(self, nbytes: float) -> int:
        return int(round(nbytes * self.tokens_per_byte))

    def provenance(self) -> dict:
        return {"tokens_per_byte": round(self.tokens_per_byte, 6), "method": self.method, "pairs": self.pairs,
                "error_pct": None if self.error_pct is None else round(self.error_pct, 3)}


def for_request(ratio: TokenRatio | None, prompt_tokens: int, sent_bytes: int) -> TokenRatio:
    """The ratio to convert a request's removed bytes with: the measured one, else (no
    calibration stage ran) the request's own prompt total over its own body bytes."""
    if ratio is not None and ratio.tokens_per_byte > 0:
        return ratio
    return TokenRatio(prompt_tokens / sent_bytes if sent_bytes > 0 else 0.0, "own_request", 0, None)


class _Conversation:
    __slots__ = ("model", "last", "pairs", "fit")

    def __init__(self, model: str):
        self.model = model
        self.last: tuple[int, int] | None = None  # (sent bytes, prompt tokens) of the last request
        self.pairs: deque[Pair] = deque(maxlen=MAX_PAIRS)
        self.fit: tuple[float, float, float, int, int] | None = None  # (r, c, spread, pairs, bytes)


class ConversationRatios:
    """Per conversation: the last request's (bytes, prompt) and the pairs its successors gave.

    ``observe`` is called once per answered request with usage counts; it returns
    the ratio to convert that request's removed bytes with. Thread-safe; bounded
    (least recently used conversations are forgotten)."""

    def __init__(self, max_conversations: int = MAX_CONVERSATIONS):
        self.max_conversations = max_conversations
        self._items: OrderedDict[Hashable, _Conversation] = OrderedDict()
        self._lock = threading.Lock()

    def observe(self, key: Hashable, model: str, sent_bytes: int, prompt_tokens: int) -> TokenRatio:
        with self._lock:
            conv = self._items.get(key)
            if conv is None:
                conv = self._items[key] = _Conversation(model)
                while len(self._items) > self.max_conversations:
                    self._items.popitem(last=False)
            else:
                self._items.move_to_end(key)
            previous = conv.last[1] if conv.last is not None else None
            if conv.last is not None:
                db, dp = sent_bytes - conv.last[0], prompt_tokens - conv.last[1]
                if db > 0 and dp > 0:  # the history grew: a step of this conversation
                    conv.pairs.append((db, dp))
                    conv.fit = None
            conv.last = (sent_bytes, prompt_tokens)
            fit = self._fit(conv)
            if fit is not None:
                r, _, spread, n, _ = fit
                return TokenRatio(r, "fit", n, spread, previous)
            pooled = self._pooled(model)
            if pooled is not None:
                r, spread, n = pooled
                return TokenRatio(r, "pooled", n, spread, previous)
            own = prompt_tokens / sent_bytes if sent_bytes > 0 else 0.0
            return TokenRatio(own, "own_request", len(conv.pairs), None, previous)

    @staticmethod
    def _fit(conv: _Conversation) -> tuple[float, float, float, int, int] | None:
        if conv.fit is None and len(conv.pairs) >= MIN_FIT:
            pts = list(conv.pairs)
            r, c = lad(pts)
            if r > 0:
                conv.fit = (r, c, spread_pct(pts, r, c), len(pts), sum(b for b, _ in pts))
        return conv.fit

    def _pooled(self, model: str) -> tuple[float, float, int] | None:
        fits = [f for c in self._items.values() if c.model == model and (f := self._fit(c)) is not None]
        weight = sum(f[4] for f in fits)
        if not fits or weight <= 0:
            return None
        r = sum(f[0] * f[4] for f in fits) / weight
        spread = sum(f[2] * f[4] for f in fits) / weight
        # The pooled slope's own spread plus how far the conversations' slopes are from it.
        between = 100.0 * sum(abs(f[0] - r) * f[4] for f in fits) / weight / r if r > 0 else 100.0
        return r, spread + between, sum(f[3] for f in fits)


__all__ = ["MIN_FIT", "ConversationRatios", "TokenRatio", "for_request", "fit_error_pct", "lad", "spread_pct", "wmedian"]
