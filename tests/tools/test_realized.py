"""tools/realized.py: the tier a removed declaration would have been billed at, and its price."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from scalpel_desktop.tools.realized import billed_tier, price


def usage(read=0, w1h=0, w5m=0):
    return SimpleNamespace(cache_read=read, cache_write_1h=w1h, cache_write_5m=w5m)


@pytest.mark.parametrize("u, tier", [
    (usage(read=10, w1h=5, w5m=5), "cache_read"),
    (usage(w1h=5, w5m=5), "write_1h"),
    (usage(w5m=5), "write_5m"),
    (usage(), "input"),
    (usage(read=None, w1h=None, w5m=None), "input"),
])
def test_billed_tier_is_the_first_tier_of_the_prefix(u, tier):
    assert billed_tier(u) == tier


def test_price_multiplies_by_the_tier_rate_and_is_none_when_unknown():
    rates = SimpleNamespace(cache_read=0.3e-6, input=3e-6, write_5m=None)
    assert price(1000, "cache_read", rates) == pytest.approx(0.0003)
    assert price(1000, "input", rates) == pytest.approx(0.003)
    assert price(1000, "write_5m", rates) is None
    assert price(1000, "write_1h", rates) is None
    assert price(1000, "input", None) is None
