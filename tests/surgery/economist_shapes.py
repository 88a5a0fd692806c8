"""Shared by the economist's tests: a configured Economist and request shapes built by hand.

``tests/surgery/test_economist.py`` (the natural break, the cold policy) and
``tests/surgery/test_payback.py`` (the warm policies) both drive the economist
through these, so a shape means the same in both.
"""

from __future__ import annotations

from scalpel_desktop.accounting.prices import PriceTable
from scalpel_desktop.surgery.economist import Economist
from scalpel_desktop.surgery.plan import RequestShape
from scalpel_desktop.wire.cache_rules import ttl_seconds

KEY = ("session-1", "")
OPUS = "claude-opus-4-5"
HAIKU = "claude-haiku-4-5"


def econ(**settings):
    base = {"policy": "cold", "batch_min_tokens": 2000, "ttl_margin_s": 30, "payback_turns_min": 5,
            "payback_turns_max": 50, "payback_factor": 2.0}
    base.update(settings)
    return Economist(base, PriceTable.builtin())


def shape(units, at, *, model=OPUS, key=KEY, ttl="5m", system="S", tools="T", settings="X",
          beta=False, unit_tokens=None, total=100_000):
    return RequestShape(key=key, model=model, at=at, unit_hashes=tuple(units), tools_hash=tools,
                        system_hash=system, settings_hash=settings, ttl_s=ttl_seconds(ttl),
                        tool_changes_ok=beta, unit_tokens=unit_tokens, total_tokens=total)


def sent(e, s, finished_after=2.0, saved_usd=0.0):
    serial = e.record_sent(s)
    e.record_finished(s.key, s.model, serial, s.at + finished_after, saved_usd=saved_usd)
    return serial


def units(n, prefix="u"):
    return [f"{prefix}{i}" for i in range(n)]


# Bench bodies with Claude Code 2.1's markers (one on the last message only) whatever version recorded
# the transcript: a pre-2.1 client moves a second marker from message to message, so its bodies are not
# append-only byte for byte, which the tests of the paths that reuse a previous body need them to be.
from scalpel_desktop.bench.client_markers import NEW as APPEND_ONLY  # noqa: E402, F401
