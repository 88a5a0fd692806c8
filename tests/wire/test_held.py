"""wire/held.py: what a remembered body is counted as holding - more than its raw bytes, in proportion."""

from __future__ import annotations

import tracemalloc

from scalpel_desktop.surgery.testing import SessionBuilder, file_text
from scalpel_desktop.wire.held import doc_bytes, layout_bytes, view_bytes
from scalpel_desktop.wire.jsoncodec import dumps, loads


def test_the_estimates_scale_with_the_body_and_count_the_document_at_its_measured_size():
    assert doc_bytes(0) == layout_bytes(0) == view_bytes(0) == 0
    assert doc_bytes(2_000_000) == 2 * doc_bytes(1_000_000) > 1_000_000  # a parsed document outweighs its JSON
    assert layout_bytes(1_000_000) < view_bytes(1_000_000) < doc_bytes(1_000_000)


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
