"""Can a warm cut of a conversation never seen pay? A bound from message sizes, for the lane.

``pipeline/lane.py`` sends a large first sighting before anything parses it
only when the surgery stage would surely send it as it came. Under a warm
policy with turns to earn on (``first_sighting.warm_cut_possible``) that rests
on the economist's plan (``payback.payback_plan``), which ``would_cut`` asks
with the full analysis. For a conversation the economist has never seen, that
plan is narrow enough to bound without one:

* its break is the last message, and no entry of it is known: nothing is
  pinned, so every warm cut is priced at its worst case, nothing read, and
  the region re-written is the whole prompt before the last message
  (``total - tokens(last)``, in the stage's own byte estimates);
* its risk budget is empty, so a cut is made only when ``extra <= 0``:
  ``max(0, region - saving) * write <= region * read``, i.e. when the tokens
  cut are at least ``(1 - read / write)`` of the region (92% at the 5-minute
  prices, 95% at the 1-hour ones);
* the tokens cut are at most the tool results' estimates in the messages
  before the last, each ``round(chars / 3.3)`` (at least 1) plus 1,600 per
  image; a result's characters never exceed its message's JSON bytes, and a
  tool_result block takes at least 40 of them.

So when the messages that hold a tool result add up to less than that share,
no warm cut can be made and the answer is certain; otherwise the usual path
asks the plan itself. Nothing here is fitted: every figure is the economist's
own rule or the estimator's definition.
"""

from __future__ import annotations

from typing import Any

from scalpel_desktop.accounting.tokens import CHARS_PER_TOKEN_DEFAULT
from scalpel_desktop.surgery.doom import IMAGE_TOKENS
from scalpel_desktop.wire.cache_rules import LONGEST_TTL_S

MIN_RESULT_BYTES = 40  # len('{"type":"tool_result","tool_use_id":"x"}') - 1


def no_warm_cut_pays(rates: Any, ttl_s: float, skeleton: Any, total_tokens: int) -> bool:
    """True when no warm cut of this never-seen conversation can have ``extra <= 0``."""
    read = float(rates.cache_read)
    write = float(rates.write_1h if ttl_s >= LONGEST_TTL_S else rates.write_5m)
    if write <= 0 or read >= write:
        return False
    spans = skeleton.spans
    if len(spans) < 2:
        return True  # nothing before the last message to cut
    units = [int(len(s) / CHARS_PER_TOKEN_DEFAULT) for s in spans]
    region = max(0, total_tokens - sum(units)) + sum(units[:-1])
    if region <= 0:
        return False
    most = 0.0
    for s in spans[:-1]:
        raw = memoryview(s).tobytes()
        if b'"tool_result"' not in raw:
            continue
        n = len(raw)
        most += n / CHARS_PER_TOKEN_DEFAULT + n / MIN_RESULT_BYTES + IMAGE_TOKENS * raw.count(b'"image"')
    return most < region * (1.0 - read / write)
