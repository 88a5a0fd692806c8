"""wire/held.py: what a remembered body is counted as holding - more than its raw bytes, in proportion."""

from __future__ import annotations

import tracemalloc

from scalpel_desktop.surgery.testing import SessionBuilder, file_text
import pytest

from scalpel_desktop.surgery.doom import find_doom_spans
from scalpel_desktop.wire.formats import view_for
from scalpel_desktop.wire.held import body_held, doc_bytes, layout_bytes, view_bytes
from scalpel_desktop.wire.jsoncodec import dumps, loads
from scalpel_desktop.wire.layout import locate


def test_the_estimates_scale_with_the_body_and_its_messages():
    assert doc_bytes(0) == layout_bytes(0) == view_bytes(0) == 0
    assert doc_bytes(2_000_000) == 2 * doc_bytes(1_000_000) > 2 * 1_000_000  # a parsed document outweighs its JSON
    assert doc_bytes(1_000_000, 5_000) > doc_bytes(1_000_000, 50)  # the same bytes in more objects hold more
    assert view_bytes(1_000_000, 5_000) > view_bytes(1_000_000, 50)
    assert layout_bytes(100) < view_bytes(1_000_000, 100) < doc_bytes(1_000_000, 100)
    assert body_held(1_000, 3) == 1_000 + layout_bytes(3) + doc_bytes(1_000, 3)
    assert body_held(1_000, 3, parsed=False) == 1_000 + layout_bytes(3)


def test_a_parsed_body_is_not_counted_as_holding_less_than_it_does():
    """tracemalloc on a Claude Code shaped body: the document estimate is at least what loads() keeps."""
    s = SessionBuilder()
    for i in range(40):
        s.call("Read", {"file_path": f"/p/f{i}.py"}, file_text(f"f{i}", 80))
    raw = dumps(s.body())
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    doc = loads(raw)
    held = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    assert doc["messages"] and held > len(raw) // 2
    assert doc_bytes(len(raw)) >= 0.8 * held


def _body(results: int, lines: int) -> bytes:
    """Claude Code shaped: Read results in its ``cat -n`` format (``→``: non-ASCII, as every real one)."""
    s = SessionBuilder()
    for i in range(results):
        text = "\n".join(f"{n:>6}\u2192    value_{i}_{n} = compute(value_{i}_{n - 1}, {n})" for n in range(lines))
        s.call("Read", {"file_path": f"/home/user/proj/src/f{i}.py"}, text)
    return dumps(s.body())


def _traced(fn):
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    kept = fn()
    held = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    return kept, held


@pytest.mark.parametrize("results,lines", [(12, 400), (400, 4)], ids=["few large results", "many small results"])
def test_a_serialised_document_its_view_and_layout_are_not_counted_short(results, lines):
    """What a remembered body really keeps (tracemalloc): the parsed document once serialised
    (``locate`` dumps every message, and non-ASCII strings then keep a UTF-8 copy), the layout,
    the view's analysis. The estimates from size and message count cover each, for a body of a
    few large results as for one of many small ones (where objects outweigh bytes)."""
    raw = _body(results, lines)

    def parsed():
        doc = loads(raw)
        return doc, locate(raw, doc, None)

    (doc, layout), doc_held = _traced(parsed)
    m = len(doc["messages"])
    assert layout is not None and len(layout.ends) == m
    assert doc_held > 2 * len(raw)  # more than the old raw-only factor (2.1) left room for
    assert doc_bytes(len(raw), m) + layout_bytes(m) >= doc_held

    def analysed():
        view = view_for("messages", doc)
        view.unit_hashes()
        find_doom_spans(view, {}, tier=2)
        return view

    view, view_held = _traced(analysed)
    assert view_bytes(len(raw), m) >= view_held
    assert view is not None
