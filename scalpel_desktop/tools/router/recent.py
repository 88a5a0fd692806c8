"""Recently called tools, remembered per upstream command (so a new session starts informed).

A small JSON file under ``dirs().state / "mcp-router"`` named after a hash of
the upstream command line; tool names only.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Sequence

from scalpel_desktop.atomicfile import write_atomic
from scalpel_desktop.paths import dirs

KEEP = 20


def state_file(command: Sequence[str]) -> Path:
    h = hashlib.sha256("\0".join(command).encode()).hexdigest()[:16]
    return dirs().state / "mcp-router" / f"{h}.json"


def load(command: Sequence[str]) -> list[str]:
    try:
        data = json.loads(state_file(command).read_text(encoding="utf-8"))
        return [str(x) for x in data.get("recent", [])][:KEEP]
    except (OSError, ValueError, AttributeError):
        return []


def remember(command: Sequence[str], recent: list[str], name: str) -> list[str]:
    recent = [name] + [n for n in recent if n != name]
    recent = recent[:KEEP]
    path = state_file(command)
    try:
        write_atomic(path, json.dumps({"recent": recent}).encode("utf-8"), fsync=False)
    except OSError:
        pass
    return recent
