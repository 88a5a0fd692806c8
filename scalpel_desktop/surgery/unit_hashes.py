"""The economist's per-unit hashes of a view's current document, stubs included.

From the layout's hashes of the original messages (``wire/layout.py``), with
each rewritten message hashed again - once: a rewritten message that is the
very object the conversation's previous view sent (an adopted replay) keeps
the hash computed for it then (messages are never mutated once built).
"""

from __future__ import annotations

from typing import Any

from scalpel_desktop.wire.hashing import message_hash
from scalpel_desktop.wire.layout import Layout

_HASHES_OF_REWRITTEN = "_scalpel_rewritten_hashes"  # on a view: {unit: (rewritten message, its hash)}


def sent_unit_hashes(view: Any, layout: Layout | None, previous: Any = None) -> tuple:
    """The economist's per-unit hashes of the view's CURRENT document (stubs included).

    A rewritten message that is the very object ``previous`` sent (an
    adopted replay) keeps the hash computed for it then (messages are
    never mutated once built)."""
    if view.endpoint != "messages":
        return tuple(view.unit_hashes())
    msgs = view.doc["messages"]
    if layout is None or len(layout.hashes) != len(msgs):
        return tuple(message_hash(m) for m in msgs)
    hashes = list(layout.hashes)
    known = previous.__dict__.get(_HASHES_OF_REWRITTEN, {}) if previous is not None else {}
    mine: dict[int, tuple[Any, bytes]] = {}
    for tid in view.replaced:
        r = view.result(tid)
        if r is not None:
            i = r.unit_index
            m = msgs[i]
            got = mine.get(i) or known.get(i)
            h = got[1] if got is not None and got[0] is m else message_hash(m)
            hashes[i] = h
            mine[i] = (m, h)
    view.__dict__[_HASHES_OF_REWRITTEN] = mine
    return tuple(hashes)
