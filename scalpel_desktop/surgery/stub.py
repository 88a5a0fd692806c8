"""The text that replaces a cut result, and the content shape it goes in.

A stub is a pure function of (kind, tokens, sha, version) and the spill
directory as shown to the model (``~/...``, never the user's name nor an
absolute home path), so re-applying a logged cut after a restart yields the
very same bytes. Change the wording only by adding a new ``STUB_VERSION``:
logged cuts keep rendering with the version they were made with.

Shape: string content becomes a string stub; block-list content becomes a
list with one text block (carrying the ``cache_control`` marker if any block
of the original had one, so breakpoints stay where they were).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from scalpel_desktop.paths import home_relative
STUB_VERSION = 1

REASONS = {
    "superseded_read": "superseded read removed",
    "duplicate": "duplicate output removed (a later copy is kept)",
    "failed": "old failed command output removed",
    "dead_snapshot": "old page snapshot removed",
    "stale_large": "old large output removed",
}


def spill_display_dir(spill_dir: Path | str) -> str:
    """The spill directory as the model and the user see it: ``~/...`` under home."""
    return home_relative(Path(spill_dir)).rstrip("/")


def stub_text(kind: str, tokens: int, sha: str, version: int = STUB_VERSION, spill_dir: str = "~/spill") -> str:
    """The stub sentence for one cut (``spill_dir`` as from ``spill_display_dir``)."""
    if version != 1:
        raise ValueError(f"unknown stub version {version}")
    reason = REASONS.get(kind, "output removed")
    return f"[scalpel: {reason} (~{tokens:,} tokens). Original: {spill_dir}/{sha[:2]}/{sha} ]"


def stub_content(original: Any, text: str, text_type: str = "text") -> Any:
    """``text`` in the shape of ``original``: a string, or a list of one text block."""
    if isinstance(original, list):
        block: dict[str, Any] = {"type": text_type, "text": text}
        for b in original:
            if isinstance(b, dict) and "cache_control" in b:
                block["cache_control"] = b["cache_control"]
        return [block]
    return text
