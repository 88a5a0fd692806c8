"""The surgery's realized saving of one request, from the provider's usage counts (SPEC 7).

Tokens: the bytes the stubs took out of the body sent (received minus sent,
exact) times the conversation's own tokens per byte, measured from its
requests' usage (``accounting/token_ratio.py``, put on ``ex.token_ratio`` by
``pipeline/calibrate.py``). No estimator table: a conversation without a
measured ratio yet uses its own request's prompt total over its body bytes,
and the provenance says so.

Dollars: each removed token at the rate its position was billed at in this
request (the tier boundaries come from the usage counts): cache read inside
the part read, the write rate inside the part written (1h entries before 5m
ones), the input rate after it. The bytes are split across the stubs by their
estimated sizes only to place each in its tier.

A warm cut's rewrite (what would have been read from cache, written again
because the cut changed the prefix) is charged too: measured as the previous
request's prompt total (the cached prefix this request would have read)
minus the tokens the new cuts removed from it minus what this request did
read; the economist's estimate only when the previous total is unknown.
"""

from __future__ import annotations

from typing import Any

from scalpel_desktop.accounting.token_ratio import TokenRatio, for_request
from scalpel_desktop.exchange import Realized, SurgerySent
from scalpel_desktop.wire.usage import Usage

ESTIMATE_BYTES_PER_TOKEN = 3.3  # the unit of the economist's per-message sizes (``stage._shape``)


def _tier_rates(prices: Any, sent: SurgerySent, usage: Usage):
    """``rate_at(position 0..1 of the body)``: the rate of the tier that position was billed at in
    ``usage`` (cache read inside the part read, the write rates inside the part written, 1 h entries
    before 5 m ones, the input rate after), with the rates that apply to this request."""
    rates = prices.rates(sent.model).for_prompt(usage.prompt_tokens)
    total = usage.prompt_tokens
    read_end = usage.cache_read
    w1h_end = read_end + usage.cache_write_1h
    w_end = w1h_end + usage.cache_write_5m

    def rate_at(frac: float) -> float:
        at = frac * total
        return float(rates.cache_read if at < read_end else rates.write_1h if at < w1h_end
                     else rates.write_5m if at < w_end else rates.input)

    return rates, rate_at


def realized(prices: Any, sent: SurgerySent, usage: Usage, ratio: TokenRatio | None = None,
             sent_bytes: int = 0) -> Realized:
    """The saving of the stubs ``sent`` carried, as a ``Realized`` with its provenance."""
    rates, rate_at = _tier_rates(prices, sent, usage)
    r = for_request(ratio, usage.prompt_tokens, sent_bytes)
    weights = [max(0, saved) for _, _, saved, _ in sent.stubs]
    wsum = sum(weights)
    removed = r.tokens(max(0, sent.bytes_removed))
    tokens = 0
    usd = 0.0
    new_tokens = 0.0
    for (_, frac, _, kind), w in zip(sent.stubs, weights):
        share = removed * (w / wsum if wsum else 1 / len(sent.stubs))
        usd += share * rate_at(frac)
        if kind == "new":
            new_tokens += share
    tokens = removed
    prov: dict[str, Any] = {"tier": "usage", "tokens": r.method, "bytes": max(0, sent.bytes_removed),
                            **{k: v for k, v in r.provenance().items() if k != "method"}}
    if sent.rewrite_tokens:
        # A warm (payback) cut re-wrote what would have been read: charge it here.
        write = rates.write_1h if usage.cache_write_1h >= usage.cache_write_5m else rates.write_5m
        if r.previous_prompt is not None:
            rewrite = max(0.0, min(usage.cache_write_1h + usage.cache_write_5m,
                                   r.previous_prompt - new_tokens - usage.cache_read))
            prov["rewrite"] = "usage"
        else:
            rewrite = r.tokens(sent.rewrite_tokens * ESTIMATE_BYTES_PER_TOKEN)
            prov["rewrite"] = "estimate"
        prov["rewrite_tokens"] = int(round(rewrite))
        usd -= rewrite * (write - rates.cache_read)
    return Realized("surgery", int(tokens), round(usd, 9), prov)


def banked_credit(prices: Any, sent: SurgerySent, usage: Usage) -> float:
    """What the replayed stubs of ``sent`` surely saved (dollars, the economist's estimated
    tokens), for the warm policies' risk budget (``ConversationState.banked_usd``).

    Each at the rate of the tier its position was billed at in this request: the request
    without the cut was billed at least as high there (it reads no further: scalpel's cuts
    never make a read stop earlier but at a warm cut, whose re-write the economist charges
    itself). A new stub counts too: a free one (at or after the break, where the request
    without it was billed at least as high) at the tier it was billed at, a warm one at most
    at the cache-read price (without the cut it would have been read; its re-write is the
    priced stake, ``surgery/budget.py``)."""
    rates, rate_at = _tier_rates(prices, sent, usage)
    read = float(rates.cache_read)
    warm = sent.rewrite_tokens > 0
    return sum(saved * (read if warm and kind == "new" else rate_at(frac))
               for _, frac, saved, kind in sent.stubs if saved > 0)

