"""How the dashboard writes numbers, times and small bars (one place, so tests can rely on it)."""

from __future__ import annotations

import re
from datetime import datetime

BLOCKS = " ▏▎▍▌▋▊▉█"


def tokens(n: int | None) -> str:
    """12,345 (thousands separated); an em dash for unknown."""
    return "—" if n is None else f"{int(n):,}"


def tokens_short(n: int | None) -> str:
    """12.3k / 1.2M, for narrow columns."""
    if n is None:
        return "—"
    n = int(n)
    if abs(n) >= 1_000_000:
        return f"{n / 1_000_000:.1f}M"
    if abs(n) >= 10_000:
        return f"{n / 1000:.0f}k"
    if abs(n) >= 1000:
        return f"{n / 1000:.1f}k"
    return str(n)


def usd(x: float | None) -> str:
    if x is None:
        return "—"
    if 0 < abs(x) < 0.005:  # would print as $0.00
        return f"${x:,.4f}"
    return f"${x:,.2f}"


def pct(x: float | None) -> str:
    return "—" if x is None else f"{x * 100:.0f}%"


def bar(share: float | None, width: int = 10) -> str:
    """A horizontal bar of ``width`` cells filled to ``share`` (eighths of a cell)."""
    if share is None:
        return " " * width
    eighths = round(max(0.0, min(1.0, share)) * width * 8)
    full, part = divmod(eighths, 8)
    out = "█" * full + (BLOCKS[part] if part else "")
    return out.ljust(width, "·")


def day_time(ts: float) -> str:
    return datetime.fromtimestamp(ts).strftime("%m-%d %H:%M")


def duration(seconds: float) -> str:
    s = max(0, int(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m"
    if s < 86400:
        return f"{s // 3600}h {s % 3600 // 60:02d}m"
    return f"{s // 86400}d {s % 86400 // 3600}h"


def age(seconds: float) -> str:
    return duration(seconds) + " ago"


def short_id(text: str, n: int = 8) -> str:
    return text if len(text) <= n else text[:n] + "…"


def size_bytes(n: int | None) -> str:
    if n is None:
        return "gone"
    if n < 1024:
        return f"{n} B"
    if n < 1024 * 1024:
        return f"{n / 1024:.1f} KB"
    return f"{n / 1024 / 1024:.1f} MB"


_DATE_SUFFIX = re.compile(r"-\d{8}$")


def short_model(model: str | None) -> str:
    """claude-sonnet-4-5-20250929 -> sonnet-4-5 (the full name is in the detail lines)."""
    name = _DATE_SUFFIX.sub("", model or "")
    return name[len("claude-"):] if name.startswith("claude-") else name


def clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"
