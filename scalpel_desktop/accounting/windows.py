"""Context-window size per model, so a dashboard can show context as a share of it.

Every current Claude model has a 200k-token window; some offer 1M (Sonnet 4
and 4.5 with the ``context-1m`` beta header, and the newer Opus models that
advertise it). Claude Code marks a 1M session by suffixing the model name with
``[1m]`` (e.g. ``claude-sonnet-4-5[1m]``), which selects the large window on
its own. ``one_m=True`` asks for the large window where the model has one (a
model without the option keeps its normal window).

First matching row wins; a model no row matches gets 200k.
"""

from __future__ import annotations

import re
from typing import NamedTuple


class Window(NamedTuple):
    pattern: str
    tokens: int
    one_m: int | None = None  # size with the 1M option, when the model has one


DEFAULT_WINDOW = 200_000
ONE_M = 1_000_000

WINDOWS: tuple[Window, ...] = (
    Window(r"sonnet-4", 200_000, ONE_M),
    Window(r"opus-4[-.][6-9](?!\d)", 200_000, ONE_M),
    Window(r"claude", 200_000),
    Window(r"^gpt-4\.1", 1_047_576),
    Window(r"^gpt-5", 400_000),
    Window(r"^gpt-4o", 128_000),
    Window(r"^o[34]", 200_000),
)

_COMPILED = tuple((re.compile(w.pattern, re.IGNORECASE), w) for w in WINDOWS)
_SUFFIX_1M = re.compile(r"\[1m\]\s*$", re.IGNORECASE)


def has_one_m_option(model: str) -> bool:
    w = _match(model)
    return w is not None and w.one_m is not None


def context_window(model: str | None, one_m: bool = False) -> int:
    """Tokens the model's context window holds (the 1M option when asked for or suffixed ``[1m]``)."""
    name = (model or "").strip()
    wants_1m = one_m or bool(_SUFFIX_1M.search(name))
    w = _match(name)
    if w is None:
        return DEFAULT_WINDOW
    if wants_1m and w.one_m is not None:
        return w.one_m
    return w.tokens


def _match(model: str | None) -> Window | None:
    name = _SUFFIX_1M.sub("", (model or "").strip().lower())
    for rx, w in _COMPILED:
        if rx.search(name):
            return w
    return None
