"""What a remembered body really keeps alive, in bytes: the raw bytes are the least of it.

The surgery memo and parse-reuse remember bodies between requests (so the
next request of a conversation is parsed, located and hashed only where it is
new). A remembered body keeps alive its raw bytes, the parsed document's
Python objects (dicts, lists, str: many times the JSON they came from), the
conversation view's analysis, and the layout. Their budgets count all of it
with these factors, measured with tracemalloc on real bodies
(``python benchmarks/held_memory.py``: the wire captures of Claude Code 2.0.77
and 2.1.332 and the bench's bodies rebuilt from the shared transcripts; the
bytes-weighted ratios, rounded up: 2.03, 0.64 and 0.052 on 9.7 MB of
bodies when they were set). A remembered body is one estimate, not a
count of objects: sharing (the next request's document re-uses the previous
one's message objects) makes the true figure smaller, never larger.
"""

from __future__ import annotations

# Bytes of Python objects per raw JSON byte of a parsed Messages body (``loads``).
DOC_PER_RAW_BYTE = 2.1
# ... of a conversation view's analysis built on it (results, hashes, sizes, the doom analysis).
VIEW_PER_RAW_BYTE = 0.7
# ... of a layout (three ints or digests per message): small, counted with the document.
LAYOUT_PER_RAW_BYTE = 0.06

MB = 1024 * 1024


def doc_bytes(raw_len: int) -> int:
    """Estimated memory of the parsed document of a body of ``raw_len`` bytes (raw excluded)."""
    return int(raw_len * DOC_PER_RAW_BYTE)


def layout_bytes(raw_len: int) -> int:
    """Estimated memory of a body's layout (and of a per-message hash list like it)."""
    return int(raw_len * LAYOUT_PER_RAW_BYTE)


def view_bytes(raw_len: int) -> int:
    """Estimated memory of a conversation view's own analysis of a body of ``raw_len`` bytes
    (the document it reads excluded)."""
    return int(raw_len * VIEW_PER_RAW_BYTE)
