"""surgery/unit_hashes.py: the sent hashes are the layout's, but for the rewritten messages."""

from __future__ import annotations

from scalpel_desktop.surgery.testing import SessionBuilder, file_text
from scalpel_desktop.surgery.unit_hashes import sent_unit_hashes
from scalpel_desktop.wire.formats import view_for
from scalpel_desktop.wire.hashing import message_hash
from scalpel_desktop.wire.jsoncodec import dumps
from scalpel_desktop.wire.layout import locate


def test_rewritten_messages_are_hashed_anew_and_the_rest_taken_from_the_layout():
    s = SessionBuilder()
    ids = [s.call("Read", {"file_path": f"/p/f{i}.py"}, file_text(f"f{i}", 30)) for i in range(4)]
    doc = s.body()
    raw = dumps(doc)
    layout = locate(raw, doc, None)
    view = view_for("messages", doc)
    assert sent_unit_hashes(view, layout) == tuple(layout.hashes)  # nothing rewritten
    view.replace_result_content(ids[1], "[stub]")
    got = sent_unit_hashes(view, layout)
    unit = view.result(ids[1]).unit_index
    assert got[unit] == message_hash(view.doc["messages"][unit]) != layout.hashes[unit]
    assert [h for i, h in enumerate(got) if i != unit] == [h for i, h in enumerate(layout.hashes) if i != unit]
    assert got == tuple(message_hash(m) for m in view.doc["messages"])  # as if hashed from scratch


def test_without_a_matching_layout_every_message_is_hashed():
    s = SessionBuilder()
    s.call("Read", {"file_path": "/p/a.py"}, file_text("a", 10))
    view = view_for("messages", s.body())
    assert sent_unit_hashes(view, None) == tuple(message_hash(m) for m in view.doc["messages"])
