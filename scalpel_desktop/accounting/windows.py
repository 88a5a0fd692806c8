"""Context-window size per model, so a dashboard can show context as a share of it.

The Claude rows are Claude Code 2.1.332's own catalog (``context.window``,
``maximum_window``, ``native_1m`` of each model in the baked-in model catalog
of its native binary, build 2026-11-24; ``WINDOWS_SOURCE``): the window its
statusline reports as ``context_window_size``. Newer models (Opus 4.7 and
later, Sonnet 5 and later, Haiku 5.5, Fable, Mythos) have a native 1M window;
Sonnet 4.x, Opus 4 to 4.6 and Haiku 4.5 have 200k and offer 1M with the
``context-1m`` beta, which Claude Code selects when the model name carries
``[1m]`` (e.g. ``claude-sonnet-4-5[1m]``; it strips the suffix before sending
and adds the beta header; its statusline then reports 1,000,000, measured for
Sonnet 4.5 and Haiku 4.5). ``one_m=True`` asks for the large window where the model has
one (a model without the option keeps its normal window). The OpenAI rows are
the published figures.

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

WINDOWS_SOURCE = "Claude Code 2.1.332 model catalog (native binary, BUILD_TIME 2026-11-24T19:09:44Z)"
WINDOWS_AS_OF = "2026-11-24"

_V = r"(?!\d)"  # a one-digit minor version, not the start of a date

WINDOWS: tuple[Window, ...] = (
    # native 1M (Claude Code 2.1.332: context.window = 1e6, native_1m)
    Window(r"opus-5", ONE_M),
    Window(r"opus-4[-.][78]" + _V, ONE_M),
    Window(r"sonnet-5", ONE_M),
    Window(r"haiku-5[-.]5" + _V, ONE_M),
    Window(r"fable-5", ONE_M),
    Window(r"mythos-5", ONE_M),
    # 200k, 1M with the context-1m beta (maximum_window = 1e6, or supports_1m_suffix: Claude Code then
    # reports a 1M window and sends the beta header)
    Window(r"sonnet-4", 200_000, ONE_M),
    Window(r"opus-4", 200_000, ONE_M),  # 4, 4.1, 4.5, 4.6 (4.7 and 4.8 matched above)
    Window(r"haiku-4[-.]5" + _V, 200_000, ONE_M),
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
