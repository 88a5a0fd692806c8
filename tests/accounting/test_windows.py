from __future__ import annotations

import pytest

from scalpel_desktop.accounting.windows import ONE_M, context_window, has_one_m_option


@pytest.mark.parametrize("model, plain, with_1m", [
    ("claude-sonnet-4-20250514", 200_000, 1_000_000),
    ("claude-sonnet-4-5-20250929", 200_000, 1_000_000),
    ("claude-opus-4-6", 200_000, 1_000_000),
    ("claude-opus-4-7", 1_000_000, 1_000_000),
    ("claude-opus-5-5", 1_000_000, 1_000_000),
    ("claude-opus-5", 1_000_000, 1_000_000),
    ("claude-sonnet-5-5", 1_000_000, 1_000_000),
    ("claude-haiku-5-5", 1_000_000, 1_000_000),
    ("claude-fable-5-2", 1_000_000, 1_000_000),
    ("claude-opus-4-5-20251101", 200_000, 1_000_000),
    ("claude-opus-4-1-20250805", 200_000, 1_000_000),
    ("claude-opus-4-20250514", 200_000, 1_000_000),
    ("claude-haiku-4-5-20251001", 200_000, 1_000_000),
    ("claude-3-5-haiku-20241022", 200_000, 200_000),
    ("gpt-4o", 128_000, 128_000),
    ("gpt-4.1-mini", 1_047_576, 1_047_576),
    ("gpt-5", 400_000, 400_000),
    ("", 200_000, 200_000),
    ("something-new", 200_000, 200_000),
])
def test_windows(model, plain, with_1m):
    assert context_window(model) == plain
    assert context_window(model, one_m=True) == with_1m


def test_claude_code_1m_suffix_selects_the_large_window():
    assert context_window("claude-sonnet-4-5[1m]") == 1_000_000
    assert context_window("claude-sonnet-4-5-20250929[1M]") == 1_000_000
    assert context_window("claude-haiku-4-5[1m]") == 1_000_000  # Claude Code 2.1.332 reports 1M for it
    assert context_window("claude-3-5-haiku[1m]") == 200_000  # no such option: the suffix changes nothing
    assert has_one_m_option("claude-sonnet-4-5[1m]") and not has_one_m_option("claude-3-5-haiku")


@pytest.mark.claude_cli
def test_every_claude_code_model_has_claude_codes_window():
    from tests.support.claude_catalog import catalog

    for entry in catalog()["models"]:
        ctx = entry.get("context") or {"window": 200_000}
        for name in {entry["id"], entry["provider_ids"]["first_party"]}:
            assert context_window(name) == ctx["window"], name
            one_m = ctx.get("maximum_window") or (ONE_M if ctx.get("supports_1m_suffix") else ctx["window"])
            assert context_window(name, one_m=True) == one_m, name
