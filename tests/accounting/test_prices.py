from __future__ import annotations

import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scalpel_desktop.accounting.prices import BUILTIN_PATH, TIERS, PriceTable, PriceTableError, merge_tables
from scalpel_desktop.wire.usage import Usage
from scalpel_desktop.paths import dirs

M = 1_000_000


def builtin_json() -> dict:
    return json.loads(BUILTIN_PATH.read_text())


def test_builtin_table_is_dated_and_every_family_is_complete():
    data = builtin_json()
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", data["as_of"])
    t = PriceTable.builtin()
    assert t.as_of == data["as_of"]
    for fam in data["families"]:
        for pat in fam["match"]:
            re.compile(pat)
        assert fam["input"] > 0 and fam["output"] > 0
        assert "cache_read_x" in fam or "cache_read" in fam


@pytest.mark.parametrize(
    "model, family, inp, out",
    [
        ("claude-opus-4-20250514", "claude-opus-4", 15, 75),
        ("claude-opus-4-1-20250805", "claude-opus-4.1", 15, 75),
        ("claude-opus-4-5-20251101", "claude-opus-4.5+", 5, 25),
        ("claude-opus-4-6", "claude-opus-4.5+", 5, 25),
        ("claude-opus-4-7", "claude-opus-4.5+", 5, 25),
        ("claude-opus-5-5", "claude-opus-5.5", 4, 20),
        ("claude-opus-5-5[1m]", "claude-opus-5.5", 4, 20),
        ("claude-opus-5", "claude-opus-5", 5, 25),
        ("claude-opus-5-20260301", "claude-opus-5", 5, 25),
        ("claude-sonnet-5-5", "claude-sonnet-5.5", 2, 10),
        ("claude-sonnet-5", "claude-sonnet-5", 2, 10),
        ("claude-haiku-5-5", "claude-haiku-5.5", 0.1, 0.5),
        ("claude-fable-5-2", "claude-fable-5.2", 8, 40),
        ("claude-mythos-5-1", "claude-mythos-5.1", 10, 50),
        ("us.anthropic.claude-opus-5-5", "claude-opus-5.5", 4, 20),
        ("claude-sonnet-4-20250514", "claude-sonnet-4", 3, 15),
        ("claude-sonnet-4-5-20250929", "claude-sonnet-4", 3, 15),
        ("claude-sonnet-4-5[1m]", "claude-sonnet-4", 3, 15),
        ("claude-3-7-sonnet-20250219", "claude-sonnet-3.7", 3, 15),
        ("claude-3-5-haiku-20241022", "claude-haiku-3.5", 0.8, 4),
        ("claude-haiku-4-5-20251001", "claude-haiku-4.5", 1, 5),
        ("anthropic.claude-opus-4-1-20250805-v1:0", "claude-opus-4.1", 15, 75),
        ("claude-opus-4@20250514", "claude-opus-4", 15, 75),
        ("gpt-4o-2024-08-06", "gpt-4o", 2.5, 10),
        ("gpt-4o-mini", "gpt-4o-mini", 0.15, 0.6),
        ("gpt-4.1", "gpt-4.1", 2, 8),
        ("gpt-5", "gpt-5", 1.25, 10),
        ("gpt-5-mini-2025-08-07", "gpt-5-mini", 0.25, 2),
    ],
)
def test_known_models_match_their_family(model, family, inp, out):
    r = PriceTable.builtin().rates(model)
    assert r.family == family and not r.assumed
    assert r.input * M == pytest.approx(inp)
    assert r.output * M == pytest.approx(out)


def test_cache_read_multiple_is_per_model():
    t = PriceTable.builtin()
    assert t.rates("claude-opus-5-5").cache_read_x == pytest.approx(0.05)
    assert t.rates("claude-opus-5").cache_read_x == pytest.approx(0.1)
    assert t.rates("claude-fable-5-2").cache_read_x == pytest.approx(0.025)
    r = t.rates("claude-opus-5-5")  # SPEC section 3: $4 in, $20 out, read 0.05x, 5m write 1.25x
    assert (r.input * M, r.output * M, r.cache_read * M, r.write_5m * M, r.write_1h * M) == pytest.approx(
        (4.0, 20.0, 0.2, 5.0, 8.0))


def test_every_family_names_a_dated_source():
    data = builtin_json()
    for fam in data["families"]:
        src = data["sources"][fam["source"]]
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", src["as_of"]) and src["what"]


def test_claude_cache_tiers_are_the_table_multiples():
    data = {f["family"]: f for f in builtin_json()["families"]}
    t = PriceTable.builtin()
    for model, fam in [("claude-opus-4-5-20251101", "claude-opus-4.5+"), ("claude-haiku-4-5", "claude-haiku-4.5")]:
        spec, r = data[fam], t.rates(model)
        assert r.cache_read == pytest.approx(r.input * spec["cache_read_x"])
        assert r.write_5m == pytest.approx(r.input * spec["write_5m_x"])
        assert r.write_1h == pytest.approx(r.input * spec["write_1h_x"])


def test_openai_cached_input_is_the_published_absolute_price():
    spec = next(f for f in builtin_json()["families"] if f["family"] == "gpt-4.1")
    r = PriceTable.builtin().rates("gpt-4.1-2025-04-14")
    assert r.cache_read * M == pytest.approx(spec["cache_read"])
    assert r.cache_read_x == pytest.approx(spec["cache_read"] / spec["input"])


@pytest.mark.parametrize(
    "model, family",
    [("claude-opus-6", "claude-opus-5.5"), ("claude-opus-5-7", "claude-opus-5.5"), ("claude-sonnet-6", "claude-sonnet-5.5"),
     ("claude-fable-6", "claude-fable-5.2"), ("mystery-model", "claude-sonnet-4"), ("", "claude-sonnet-4"),
     ("haiku", "claude-haiku-5.5")],
)
def test_unknown_models_fall_back_and_say_assumed(model, family):
    r = PriceTable.builtin().rates(model)
    assert r.assumed and r.family == family
    assert r.label == f"{family} (assumed)"


def test_cost_is_the_sum_of_tiers():
    r = PriceTable.builtin().rates("claude-sonnet-4-5-20250929")
    u = Usage(input_tokens=1234, cache_write_5m=3500, cache_write_1h=800, cache_read=40_000, output_tokens=321)
    expected = sum(r.price_tokens(t, n) for t, n in [
        ("input", 1234), ("write_5m", 3500), ("write_1h", 800), ("cache_read", 40_000), ("output", 321)])
    assert r.cost(u) == pytest.approx(expected)
    # the same by hand, from the published $/MTok
    assert r.cost(u) == pytest.approx((1234 * 3 + 3500 * 3.75 + 800 * 6 + 40_000 * 0.3 + 321 * 15) / M)


def test_long_context_premium_applies_above_the_threshold():
    r = PriceTable.builtin().rates("claude-sonnet-4-5[1m]")
    assert r.long_context is not None
    above = r.long_context_above
    small = Usage(input_tokens=above, output_tokens=10)
    big = Usage(input_tokens=above + 1, output_tokens=10)
    assert r.cost(small) == pytest.approx(above * r.input + 10 * r.output)
    lc = r.long_context
    assert lc.input > r.input and lc.output > r.output
    assert r.cost(big) == pytest.approx((above + 1) * lc.input + 10 * lc.output)
    assert lc.cache_read_x == pytest.approx(r.cache_read_x)


def test_price_tokens_rejects_unknown_tier():
    with pytest.raises(ValueError, match="tier"):
        PriceTable.builtin().rates("gpt-5").price_tokens("bogus", 1)


@given(st.integers(0, 10**7), st.integers(0, 10**7), st.integers(0, 10**7), st.integers(0, 10**7), st.integers(0, 10**6))
def test_cost_is_linear_and_nonnegative(a, b, c, d, e):
    r = PriceTable.builtin().rates("claude-opus-4-1")
    u = Usage(a, b, c, d, e)
    assert r.cost(u) >= 0
    assert r.cost(Usage(2 * a, 2 * b, 2 * c, 2 * d, 2 * e)) == pytest.approx(2 * r.cost(u))


def test_user_override_merges_over_builtin():
    path = dirs().config / "prices.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({
        "as_of": "2027-01-02",
        "families": [
            {"family": "claude-sonnet-4", "input": 2.0, "cache_read_x": 0.05},
            {"family": "house-model", "match": ["^house-"], "input": 1.0, "output": 2.0, "cache_read_x": 0.025},
            {"family": "cheap-opus", "match": ["opus-4-7"], "input": 4.0, "output": 20.0, "cache_read_x": 0.1,
             "write_5m_x": 1.25, "write_1h_x": 2.0},
        ],
    }))
    t = PriceTable.load()
    assert t.as_of == "2027-01-02" and not t.warnings
    s = t.rates("claude-sonnet-4-5")
    assert s.input * M == pytest.approx(2.0) and s.output * M == pytest.approx(15.0)
    assert s.cache_read * M == pytest.approx(0.1)  # 0.05 x 2.0
    h = t.rates("house-7")
    assert h.family == "house-model" and h.cache_read * M == pytest.approx(0.025)
    assert h.write_5m == pytest.approx(h.input)  # no write premium unless the table says so
    assert t.rates("claude-opus-4-7").family == "cheap-opus"  # new families match first
    assert t.rates("claude-opus-4-5").family == "claude-opus-4.5+"


@pytest.mark.parametrize("text", ["{not json", json.dumps({"families": [{"family": "x", "match": ["("], "input": 1, "output": 1, "cache_read_x": 0.1}]}),
                                  json.dumps({"families": [{"family": "claude-sonnet-4", "input": -3}]}), "[]"])
def test_bad_override_is_ignored_with_a_warning(text, caplog):
    path = dirs().config / "prices.json"
    path.parent.mkdir(parents=True)
    path.write_text(text)
    t = PriceTable.load()
    assert t.warnings and str(path) in t.warnings[0]
    assert t.as_of == builtin_json()["as_of"]
    assert t.rates("claude-sonnet-4").input * M == pytest.approx(3.0)


def test_merge_requires_family_names():
    with pytest.raises(PriceTableError, match="family"):
        merge_tables(builtin_json(), {"families": [{"input": 1}]})


def test_as_dict_has_every_tier_per_mtok():
    d = PriceTable.builtin().rates("claude-haiku-4-5").as_dict()
    assert set(TIERS) <= set(d)
    assert d["input"] == pytest.approx(1.0)


# -- against Claude Code's own catalog (read from the installed binary) ------------------------

# The one knowing difference: the published list charges Sonnet 4.x a long-context premium above
# 200k prompt tokens (1M beta); Claude Code 2.1.332's catalog does not. The table keeps the premium.
NO_PREMIUM_IN_CLAUDE_CODE = {"claude-sonnet-4"}


@pytest.mark.claude_cli
def test_every_claude_code_model_is_priced_as_claude_code_prices_it():
    from tests.support.claude_catalog import catalog, model_pricing

    table = PriceTable.builtin()
    models = catalog()["models"]
    assert len(models) >= 20
    for entry in models:
        cc = model_pricing(entry)
        for name in {entry["id"], entry["provider_ids"]["first_party"]}:
            r = table.rates(name)
            assert not r.assumed, name
            got = (r.input, r.output, r.cache_read, r.write_5m, r.write_1h)
            want = tuple(cc[k] / M for k in ("input", "output", "cache_read", "cache_write_5m", "cache_write_1h"))
            assert got == pytest.approx(want), (name, r.as_dict(), cc)
            lp = cc.get("long_prompt")
            if lp:
                assert r.long_context_above == lp["above_prompt_tokens"], name
                lc = r.long_context
                assert (lc.input, lc.output, lc.cache_read, lc.write_5m, lc.write_1h) == pytest.approx(
                    tuple(lp[k] / M for k in ("input", "output", "cache_read", "cache_write_5m", "cache_write_1h")))
            else:
                assert r.long_context is None or r.family in NO_PREMIUM_IN_CLAUDE_CODE, name


@pytest.mark.claude_cli
def test_claude_codes_aliases_resolve_to_priced_models():
    from tests.support.claude_catalog import catalog

    table = PriceTable.builtin()
    for alias, spec in catalog()["aliases"].items():
        assert not table.rates(spec["default"]).assumed, alias
        # an unknown model of a family is priced like the family's latest model, labelled assumed
        latest = catalog()["latest_per_family"].get(alias)
        if latest:
            guess = table.rates(f"claude-{alias}-99")
            assert guess.assumed and guess.family == table.rates(latest).family, alias
