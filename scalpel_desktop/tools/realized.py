"""Realized savings of the tool filter: tokens really not sent, priced at the billed tier.

The removed declarations sit at the very start of the prompt, so they would have
been billed like the first tokens of the prefix: a cache read when the request read
anything from the cache; else a cache write (1h entries come before 5m ones); else
uncached input. Projections (``tools/suggest.py``) are never mixed in here.
"""

from __future__ import annotations

from typing import Any

from scalpel_desktop.wire.usage import Usage


def billed_tier(usage: Usage) -> str:
    if (usage.cache_read or 0) > 0:
        return "cache_read"
    if (usage.cache_write_1h or 0) > 0:
        return "write_1h"
    if (usage.cache_write_5m or 0) > 0:
        return "write_5m"
    return "input"


def price(tokens: int, tier: str, rates: Any) -> float | None:
    """USD for ``tokens`` at ``tier`` of ``rates`` (a prices.Rates); None when unknown."""
    if rates is None:
        return None
    rate = getattr(rates, tier, None)
    if rate is None:
        return None
    return float(tokens) * float(rate)
