"""The surgery's realized saving of one request, priced from the provider's usage counts (SPEC 7)."""

from __future__ import annotations

from typing import Any

from scalpel_desktop.exchange import SurgerySent
from scalpel_desktop.wire.usage import Usage


def realized(prices: Any, sent: SurgerySent, usage: Usage) -> tuple[int, float]:
    """Tokens and dollars saved, each token at the rate its position was billed at (SPEC 7):
    the cache-read rate inside the part read from cache, the write rate inside the
    part written (1h entries come before 5m ones), the input rate after it."""
    rates = prices.rates(sent.model).for_prompt(usage.prompt_tokens)
    total = usage.prompt_tokens
    read_end = usage.cache_read
    w1h_end = read_end + usage.cache_write_1h
    w_end = w1h_end + usage.cache_write_5m
    tokens = 0
    usd = 0.0
    for _, frac, saved, _ in sent.stubs:
        at = frac * total
        if at < read_end:
            rate = rates.cache_read
        elif at < w1h_end:
            rate = rates.write_1h
        elif at < w_end:
            rate = rates.write_5m
        else:
            rate = rates.input
        tokens += saved
        usd += saved * rate
    if sent.rewrite_tokens:
        # A warm (payback) cut re-wrote what would have been read: charge it here.
        write = rates.write_1h if usage.cache_write_1h >= usage.cache_write_5m else rates.write_5m
        usd -= sent.rewrite_tokens * (write - rates.cache_read)
    return tokens, round(usd, 9)
