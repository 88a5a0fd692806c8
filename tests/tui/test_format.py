"""tui/format.py: how the dashboard writes numbers, times and bars."""

from __future__ import annotations

import pytest

from scalpel_desktop.tui import format as fmt


@pytest.mark.parametrize("n, out", [(None, "—"), (0, "0"), (12345, "12,345"), (-1200, "-1,200")])
def test_tokens(n, out):
    assert fmt.tokens(n) == out


@pytest.mark.parametrize("n, out", [
    (None, "—"), (999, "999"), (1000, "1.0k"), (9_949, "9.9k"), (10_000, "10k"), (999_499, "999k"),
    (1_000_000, "1.0M"), (-2_500_000, "-2.5M"),
])
def test_tokens_short(n, out):
    assert fmt.tokens_short(n) == out


@pytest.mark.parametrize("x, out", [(None, "—"), (0.0, "$0.00"), (0.004, "$0.0040"), (1234.5, "$1,234.50"),
                                    (-0.001, "$-0.0010")])
def test_usd_never_rounds_a_real_saving_to_zero(x, out):
    assert fmt.usd(x) == out


def test_pct_and_bar():
    assert fmt.pct(None) == "—" and fmt.pct(0.256) == "26%"
    assert fmt.bar(None, 4) == "    "
    assert fmt.bar(0, 4) == "····"
    assert fmt.bar(1, 4) == "████"
    assert fmt.bar(2, 4) == "████"  # clamped
    assert fmt.bar(0.5, 4) == "██··"
    assert fmt.bar(1 / 32, 4) == "▏···"  # one eighth of a cell
    assert all(len(fmt.bar(s / 10, 10)) == 10 for s in range(11))


@pytest.mark.parametrize("seconds, out", [
    (-5, "0s"), (59, "59s"), (60, "1m"), (3599, "59m"), (3600, "1h 00m"), (3 * 3600 + 5 * 60, "3h 05m"),
    (86400 + 7200, "1d 2h"),
])
def test_duration(seconds, out):
    assert fmt.duration(seconds) == out
    assert fmt.age(seconds) == out + " ago"


def test_sizes_ids_models_and_clipping():
    assert fmt.size_bytes(None) == "gone" and fmt.size_bytes(1023) == "1023 B"
    assert fmt.size_bytes(1536) == "1.5 KB" and fmt.size_bytes(3 * 1024 * 1024) == "3.0 MB"
    assert fmt.short_id("abcdefgh") == "abcdefgh" and fmt.short_id("abcdefghi") == "abcdefgh…"
    assert fmt.short_model("claude-sonnet-4-5-20250929") == "sonnet-4-5"
    assert fmt.short_model("gpt-4o-2024-08-06") == "gpt-4o-2024-08-06"
    assert fmt.short_model(None) == ""
    assert fmt.clip("hello", 5) == "hello" and fmt.clip("hello!", 5) == "hell…"


def test_day_time_uses_local_time(monkeypatch):
    import time

    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    assert fmt.day_time(0) == "01-01 00:00"
