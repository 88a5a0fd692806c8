"""What a token costs: a dated, editable price table per model family.

The built-in table is ``prices_builtin.json`` next to this module (dated by its
``as_of``). A user file ``dirs().config / "prices.json"`` in the same format
merges over it:

* a family whose ``family`` name exists in the built-in table updates that
  family field by field (e.g. ``{"family": "claude-sonnet-4", "input": 2.5}``);
* a new family is matched *before* every built-in one;
* ``as_of`` (if given) replaces the table's date; ``fallbacks`` (if given)
  replace the built-in fallbacks.

A family gives ``input`` and ``output`` in USD per million tokens, and the
cache prices either as multiples of its input price (``cache_read_x``,
``write_5m_x``, ``write_1h_x``) or absolutely (``cache_read``, ``write_5m``,
``write_1h``, USD per million tokens). The cache-read multiple always comes from
the table (0.1x for today's Claude models, others differ): nothing here assumes
0.1. A write multiple that is not given is 1.0 (providers that do not charge
for cache writes never report any). ``long_context`` (optional) gives the
prices charged for the whole request when its prompt is longer than
``above_prompt_tokens`` (Sonnet 4's 1M-context beta).

A model is matched by the families' ``match`` regular expressions (searched in
the lower-cased model name, first family wins). A model no family matches gets
the first fallback whose substring it contains (an unknown "opus" is priced like
the newest Opus family, an unknown model like Sonnet) and is flagged
``assumed``.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from collections.abc import Mapping
from typing import Any

from scalpel_desktop.errors import DataError
from scalpel_desktop.paths import dirs
from scalpel_desktop.wire.usage import Usage

log = logging.getLogger("scalpel.prices")

BUILTIN_PATH = Path(__file__).with_name("prices_builtin.json")
MTOK = 1_000_000.0
TIERS = ("input", "write_5m", "write_1h", "cache_read", "output")


class PriceTableError(DataError):
    """A price file that does not parse or has a bad entry (the message names it)."""

    title = "Bad price table"


@dataclass(frozen=True)
class Rates:
    """USD per token for one model, by billing tier."""

    input: float
    output: float
    cache_read: float
    write_5m: float
    write_1h: float
    as_of: str
    family: str
    assumed: bool = False  # no family matched the model name: a fallback was used
    long_context: "Rates | None" = field(default=None, compare=False)
    long_context_above: int | None = None

    @property
    def cache_read_x(self) -> float:
        return self.cache_read / self.input if self.input else 0.0

    @property
    def write_5m_x(self) -> float:
        return self.write_5m / self.input if self.input else 0.0

    @property
    def write_1h_x(self) -> float:
        return self.write_1h / self.input if self.input else 0.0

    @property
    def label(self) -> str:
        return f"{self.family} (assumed)" if self.assumed else self.family

    def for_prompt(self, prompt_tokens: int) -> "Rates":
        """The rates that apply to a request whose prompt has ``prompt_tokens`` tokens."""
        if self.long_context is not None and self.long_context_above is not None and prompt_tokens > self.long_context_above:
            return self.long_context
        return self

    def price_tokens(self, tier: str, n: int | float) -> float:
        """USD for ``n`` tokens billed at ``tier`` (input|write_5m|write_1h|cache_read|output)."""
        if tier not in TIERS:
            raise ValueError(f"unknown billing tier {tier!r}; one of {', '.join(TIERS)}")
        return float(getattr(self, tier)) * n

    def cost(self, usage: Usage) -> float:
        """USD billed for one response's usage counts."""
        r = self.for_prompt(usage.prompt_tokens)
        return (
            r.input * usage.input_tokens
            + r.write_5m * usage.cache_write_5m
            + r.write_1h * usage.cache_write_1h
            + r.cache_read * usage.cache_read
            + r.output * usage.output_tokens
        )

    def as_dict(self) -> dict[str, Any]:
        """Per-million-token figures, for display and JSON output."""
        d = {
            "family": self.family,
            "assumed": self.assumed,
            "as_of": self.as_of,
            **{t: round(getattr(self, t) * MTOK, 6) for t in TIERS},
            "cache_read_x": round(self.cache_read_x, 6),
        }
        if self.long_context is not None:
            d["long_context"] = {"above_prompt_tokens": self.long_context_above,
                                 **{t: round(getattr(self.long_context, t) * MTOK, 6) for t in TIERS}}
        return d


@dataclass
class _Family:
    name: str
    patterns: list[re.Pattern[str]]
    spec: dict[str, Any]


class PriceTable:
    def __init__(self, data: Mapping[str, Any], *, source: str = "built-in", warnings: list[str] | None = None):
        self.as_of = str(data.get("as_of") or "unknown")
        self.source = source
        self.warnings = list(warnings or [])
        self._families: list[_Family] = []
        for i, spec in enumerate(data.get("families") or []):
            self._families.append(_compile_family(spec, f"families[{i}]"))
        self._fallbacks = [(str(f.get("match", "")).lower(), str(f["family"])) for f in data.get("fallbacks") or []]
        by_name = {f.name: f for f in self._families}
        for sub, fam in self._fallbacks:
            if fam not in by_name:
                raise PriceTableError(f"fallback {sub!r} names unknown family {fam!r}")
        self._cache: dict[str, Rates] = {}

    # -- loading ---------------------------------------------------------

    @classmethod
    def builtin(cls) -> "PriceTable":
        return cls(_builtin_data(), source=str(BUILTIN_PATH.name))

    @classmethod
    def load(cls, override: Path | None = None) -> "PriceTable":
        """The built-in table with the user's ``prices.json`` merged over it.

        Never raises for a bad user file: it is ignored with a logged warning
        (kept in ``.warnings`` so ``scalpel report`` can show it).
        """
        if override is None:
            override = dirs().config / "prices.json"
        base = _builtin_data()
        if not override.exists():
            return cls(base, source="built-in")
        try:
            user = json.loads(override.read_text(encoding="utf-8"))
            merged = merge_tables(base, user)
            return cls(merged, source=f"built-in + {override}")
        except (OSError, ValueError, KeyError, TypeError, re.error) as e:
            msg = f"ignoring price override {override}: {e}"
            log.warning(msg)
            return cls(base, source="built-in", warnings=[msg])

    # -- lookup ----------------------------------------------------------

    def families(self) -> list[str]:
        return [f.name for f in self._families]

    def rates(self, model: str | None) -> Rates:
        key = (model or "").strip().lower()
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        fam = next((f for f in self._families if any(p.search(key) for p in f.patterns)), None)
        assumed = fam is None
        if fam is None:
            name = next((n for sub, n in self._fallbacks if sub in key), None)
            fam = next((f for f in self._families if f.name == name), None) or self._families[-1]
        rates = _rates_from_spec(fam.name, fam.spec, self.as_of, assumed)
        self._cache[key] = rates
        return rates


def merge_tables(base: Mapping[str, Any], user: Mapping[str, Any]) -> dict[str, Any]:
    """``user`` (the prices.json format) merged over ``base``; see the module docstring."""
    if not isinstance(user, Mapping):
        raise PriceTableError("the top level must be a JSON object")
    out = dict(base)
    families = [dict(f) for f in base.get("families", [])]
    index = {f["family"]: i for i, f in enumerate(families)}
    new: list[dict[str, Any]] = []
    for i, spec in enumerate(user.get("families") or []):
        if not isinstance(spec, Mapping) or not spec.get("family"):
            raise PriceTableError(f"families[{i}] needs a \"family\" name")
        name = spec["family"]
        if name in index:
            families[index[name]].update(spec)
            _compile_family(families[index[name]], f"families[{i}] ({name})")
        else:
            _compile_family(spec, f"families[{i}] ({name})")
            new.append(dict(spec))
    out["families"] = new + families
    if user.get("as_of"):
        out["as_of"] = str(user["as_of"])
    if user.get("fallbacks"):
        out["fallbacks"] = list(user["fallbacks"])
    return out


@lru_cache(maxsize=1)
def _builtin_raw() -> str:
    return BUILTIN_PATH.read_text(encoding="utf-8")


def _builtin_data() -> dict[str, Any]:
    return json.loads(_builtin_raw())


def _compile_family(spec: Mapping[str, Any], where: str) -> _Family:
    if not isinstance(spec, Mapping) or not spec.get("family"):
        raise PriceTableError(f"{where}: needs a \"family\" name")
    match = spec.get("match") or []
    if isinstance(match, str):
        match = [match]
    for k in ("input", "output"):
        v = spec.get(k)
        if not isinstance(v, (int, float)) or isinstance(v, bool) or v < 0:
            raise PriceTableError(f"{where}: {k!r} must be a non-negative number (USD per million tokens), got {v!r}")
    if "cache_read" not in spec and "cache_read_x" not in spec:
        raise PriceTableError(f"{where}: needs \"cache_read_x\" (multiple of input) or \"cache_read\" (USD/MTok)")
    for k in ("cache_read", "cache_read_x", "write_5m", "write_5m_x", "write_1h", "write_1h_x"):
        v = spec.get(k)
        if v is not None and (not isinstance(v, (int, float)) or isinstance(v, bool) or v < 0):
            raise PriceTableError(f"{where}: {k!r} must be a non-negative number, got {v!r}")
    return _Family(str(spec["family"]), [re.compile(p, re.IGNORECASE) for p in match], dict(spec))


def _tier(spec: Mapping[str, Any], name: str, base: float, default_x: float) -> float:
    if spec.get(name) is not None:
        return float(spec[name])
    x = spec.get(f"{name}_x")
    return base * (float(x) if x is not None else default_x)


def _rates_from_spec(name: str, spec: Mapping[str, Any], as_of: str, assumed: bool) -> Rates:
    inp = float(spec["input"])
    rates = Rates(
        input=inp / MTOK,
        output=float(spec["output"]) / MTOK,
        cache_read=_tier(spec, "cache_read", inp, 0.0) / MTOK,
        write_5m=_tier(spec, "write_5m", inp, 1.0) / MTOK,
        write_1h=_tier(spec, "write_1h", inp, 1.0) / MTOK,
        as_of=as_of,
        family=name,
        assumed=assumed,
    )
    lc = spec.get("long_context")
    if isinstance(lc, Mapping) and lc.get("above_prompt_tokens"):
        # The multiples of the family apply to the long-context input price too.
        lc_spec = {k: v for k, v in spec.items() if k not in ("long_context", "cache_read", "write_5m", "write_1h")}
        lc_spec.update({k: v for k, v in lc.items() if k != "above_prompt_tokens"})
        if "cache_read_x" not in lc_spec and spec.get("cache_read") is not None and inp:
            lc_spec["cache_read_x"] = float(spec["cache_read"]) / inp
        long = _rates_from_spec(name + " >" + _short(int(lc["above_prompt_tokens"])), lc_spec, as_of, assumed)
        rates = replace(rates, long_context=long, long_context_above=int(lc["above_prompt_tokens"]))
    return rates


def _short(n: int) -> str:
    return f"{n // 1000}k" if n % 1000 == 0 else str(n)

