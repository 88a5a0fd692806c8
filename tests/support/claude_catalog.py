"""The model catalog baked into the installed Claude Code binary, read as data.

Claude Code 2.1.332 ships a hand-maintained model catalog (per-model prices,
context windows, aliases) as one object literal in its native binary. The
tests read it from the installed package, the same way the price and window
tables were compiled (``strings`` on the binary), so the tables are checked
against what the client itself uses for ``total_cost_usd`` and the statusline's
``context_window_size``. Nothing here is executed: the literal is converted to
JSON (bare keys quoted, ``!0``/``!1`` to true/false) and parsed.
"""

from __future__ import annotations

import json
import mmap
import os
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

from tests.support import require

MARKER = b'{"//":"Hand-maintained baked-in model catalog'
_TOKEN = re.compile(r'(?P<s>"(?:[^"\\]|\\.)*")|(?P<t>!0)|(?P<f>!1)|(?P<k>[A-Za-z_$][\w$]*)(?=\s*:)|.', re.DOTALL)


def native_binary() -> Path | None:
    """The native executable of the installed @anthropic-ai/claude-code package, if any."""
    override = os.environ.get("SCALPEL_TEST_CLAUDE_BINARY")
    candidates = [Path(override)] if override else []
    for root in (Path("/usr/lib/node_modules"), Path("/usr/local/lib/node_modules")):
        pkg = root / "@anthropic-ai" / "claude-code"
        candidates += sorted((pkg / "node_modules" / "@anthropic-ai").glob("claude-code-*/claude"))
        candidates.append(pkg / "bin" / "claude.exe")
    return next((p for p in candidates if p.is_file() and p.stat().st_size > 1_000_000), None)


def _literal(data: bytes, start: int) -> str:
    depth, i, in_str = 0, start, False
    while True:
        c = data[i]
        if in_str:
            if c == 0x5C:  # backslash
                i += 2
                continue
            if c == 0x22:
                in_str = False
        elif c == 0x22:
            in_str = True
        elif c in b"{[":
            depth += 1
        elif c in b"}]":
            depth -= 1
            if depth == 0:
                return data[start:i + 1].decode("utf-8")
        i += 1


def _to_json(text: str) -> Any:
    def conv(m: re.Match[str]) -> str:
        if m.group("t"):
            return "true"
        if m.group("f"):
            return "false"
        if m.group("k"):
            return json.dumps(m.group("k"))
        return m.group(0)

    return json.loads(_TOKEN.sub(conv, text))


@lru_cache(maxsize=1)
def catalog() -> dict[str, Any]:
    """The catalog object (``pricing_tiers``, ``models``, ``aliases``, ...); skips when no binary is installed."""
    path = native_binary()
    require(path is not None, "the Claude Code native binary (npm install -g @anthropic-ai/claude-code@2.1.332)")
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
        at = data.find(MARKER)
        require(at >= 0, f"the baked-in model catalog in {path}")
        return _to_json(_literal(data, at))


def model_pricing(entry: dict[str, Any]) -> dict[str, Any]:
    """A catalog model's pricing (a tier name resolved through ``pricing_tiers``)."""
    p = entry.get("pricing")
    return dict(catalog()["pricing_tiers"][p]) if isinstance(p, str) else dict(p or {})
