"""What a remembered body really keeps alive, in bytes: the raw bytes are the least of it.

The surgery memo and parse-reuse remember bodies between requests (so the
next request of a conversation is parsed, located and hashed only where it is
new). A remembered body keeps alive its raw bytes, the parsed document's
Python objects, the conversation view's analysis, and the layout. Their
budgets count all of it with these estimates, from the body's size AND its
structure (its message count, which the layout gives for free):

* the document: every JSON string becomes a ``str`` (a non-ASCII one, as
  every Read result with its ``→`` line numbers is, at 2 or 4 bytes a
  character), and once the document is serialised (``locate`` and the view
  hash every message through orjson) each non-ASCII ``str`` also keeps a
  cached UTF-8 copy of itself as long as it lives: about 2.9 bytes per raw
  byte in all. Each message adds its dicts and lists (up to about 500 bytes);
* the view: per message its unit and result records, hashes and the doom
  analysis's facts (about 800 bytes, whatever the message's size);
* the layout: three list slots, two ints and a 16-byte digest per message.

Measured with tracemalloc (``python benchmarks/held_memory.py``) on the wire
captures of Claude Code 2.0.77 and 2.1.332, the bench's bodies rebuilt from
the shared transcripts, and 2.1.332 bodies grown to 2.6 MB both ways
(``benchmarks/proxy_overhead.py``: 30 KB Read results, ~220 messages, and
the capture's own small results, ~7,900 messages, whose objects outweigh
their bytes: a raw-bytes-only factor undercounted those by 40%). An estimate,
not a count of objects: sharing (the next request's document re-uses the
previous one's message objects) makes the true figure smaller, never larger.
"""

from __future__ import annotations

# Bytes of Python objects per raw JSON byte of a parsed, serialised Messages body (``loads``, then
# ``dumps`` of its messages: the UTF-8 copies non-ASCII strings then keep are counted here).
DOC_PER_RAW_BYTE = 2.9
# ... and per message (its dicts and lists, small strings' headers).
DOC_PER_MESSAGE = 500
# A conversation view's analysis built on it (units, results, hashes, the doom analysis).
VIEW_PER_RAW_BYTE = 0.05
VIEW_PER_MESSAGE = 800
# A layout (an end offset, a size and a digest per message) or a per-message hash list like it.
LAYOUT_PER_MESSAGE = 200

MB = 1024 * 1024


def doc_bytes(raw_len: int, messages: int = 0) -> int:
    """Estimated memory of the parsed document of a body of ``raw_len`` bytes and
    ``messages`` messages (raw bytes excluded)."""
    return int(raw_len * DOC_PER_RAW_BYTE) + DOC_PER_MESSAGE * max(0, messages)


def layout_bytes(messages: int) -> int:
    """Estimated memory of a layout of ``messages`` messages (and of a per-message hash list like it)."""
    return LAYOUT_PER_MESSAGE * max(0, messages)


def view_bytes(raw_len: int, messages: int = 0) -> int:
    """Estimated memory of a conversation view's own analysis (the document it reads excluded)."""
    return int(raw_len * VIEW_PER_RAW_BYTE) + VIEW_PER_MESSAGE * max(0, messages)


def body_held(raw_len: int, messages: int, *, parsed: bool = True) -> int:
    """A remembered body with its layout: raw bytes, layout and (``parsed``) its document."""
    return raw_len + layout_bytes(messages) + (doc_bytes(raw_len, messages) if parsed else 0)
