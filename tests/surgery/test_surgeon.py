"""The surgeon: spill first, stub, log only on commit, re-apply byte-identically after a restart."""

from __future__ import annotations

import copy

import pytest

from scalpel_desktop.store import db
from scalpel_desktop.store.spill import SpillError, SpillStore
from scalpel_desktop.store.cutlog import CutLog
from scalpel_desktop.surgery.doom import find_doom_spans
from scalpel_desktop.surgery.surgeon import Surgeon, content_sha
from scalpel_desktop.surgery.testing import SessionBuilder, file_text
from scalpel_desktop.surgery.validate import validate_rewrite
from scalpel_desktop.wire import jsoncodec
from scalpel_desktop.wire.formats import view_for

CWD = "/home/user/proj"


def builder():
    b = SessionBuilder(cwd=CWD)
    ids = {}
    ids["read"] = b.call("Read", {"file_path": f"{CWD}/a.py"}, file_text("a", 60))
    ids["img"] = b.call("Bash", {"command": "git log"}, [{"type": "text", "text": file_text("log", 60)}], False)
    b.call("Edit", {"file_path": f"{CWD}/a.py"}, "ok")
    b.call("Bash", {"command": "git log"}, [{"type": "text", "text": file_text("log", 60)}], False)
    for i in range(3):
        b.call("Glob", {"pattern": f"*{i}"}, "x")
    return b, ids


def make(conn=None):
    conn = conn or db.connect()
    return Surgeon(SpillStore(), CutLog(conn)), conn


def test_cut_spills_stubs_and_logs_only_on_commit():
    b, ids = builder()
    body = b.body()
    v = view_for("messages", body)
    spans = find_doom_spans(v, None, 2)
    assert {s.tool_use_id: s.kind for s in spans} == {ids["read"]: "superseded_read", ids["img"]: "duplicate"}
    surgeon, conn = make()
    cuts = surgeon.cut(v, spans, "sess", "agent-1")
    assert len(cuts) == 2 and validate_rewrite(body, v.doc) == []
    for c in cuts:
        original = view_for("messages", body).result(c.tool_use_id).content
        assert surgeon.spill.get(c.original_sha256) == jsoncodec.dumps(original)
        assert c.spill_path.endswith(f"/{c.original_sha256[:2]}/{c.original_sha256}")
        assert c.saved_tokens > 0
    assert isinstance(v.result(ids["read"]).content, str)
    lst = v.result(ids["img"]).content
    assert isinstance(lst, list) and len(lst) == 1 and lst[0]["text"].startswith("[scalpel: duplicate")
    assert CutLog(conn).lookup([ids["read"]]) == {}  # nothing logged before commit
    assert surgeon.commit() == 2
    rec = CutLog(conn).lookup([ids["read"], ids["img"], "nope"])
    assert set(rec) == {ids["read"], ids["img"]}
    assert rec[ids["read"]].session == "sess" and rec[ids["read"]].agent == "agent-1"
    assert rec[ids["read"]].stub_sha256 == content_sha(v.result(ids["read"]).content)[1]


def test_discard_logs_nothing():
    b, _ = builder()
    v = view_for("messages", b.body())
    surgeon, conn = make()
    surgeon.cut(v, find_doom_spans(v, None, 2), "s", "")
    surgeon.discard()
    assert surgeon.commit() == 0 and CutLog(conn).count() == 0


def test_reapply_after_restart_is_byte_identical_whatever_the_session():
    b, ids = builder()
    body = b.body()
    v = view_for("messages", copy.deepcopy(body))
    surgeon, conn = make()
    surgeon.cut(v, find_doom_spans(v, None, 2), "old-session", "")
    surgeon.commit()
    sent = v.serialize()
    conn.close()
    # "restart": a fresh connection, log and surgeon on the same database
    fresh, _ = make(db.connect())
    b.user("and now under a new session id")
    b.session_id = "11111111-1111-4111-8111-111111111111"
    later = view_for("messages", b.body())
    assert fresh.reapply(later) == 2
    prefix = jsoncodec.dumps(later.doc["messages"][: len(body["messages"]) - 1])
    assert prefix == jsoncodec.dumps(jsoncodec.loads(sent)["messages"][:-1])
    assert validate_rewrite(view_for("messages", b.body()).doc, later.doc) == []
    # idempotent on an already-stubbed view
    assert fresh.reapply(later) == 0


def test_reapply_skips_changed_content():
    b, ids = builder()
    v = view_for("messages", b.body())
    surgeon, _ = make()
    surgeon.cut(v, find_doom_spans(v, None, 2), "s", "")
    surgeon.commit()
    body = b.body()
    body["messages"][3]["content"][0]["content"] += "changed"
    v2 = view_for("messages", body)
    assert surgeon.reapply(v2) == 1 and not v2.result(ids["read"]).content.startswith("[scalpel:")


def test_no_spill_no_cut(monkeypatch):
    b, _ = builder()
    body = b.body()
    v = view_for("messages", body)
    surgeon, conn = make()

    def fail(contents):
        raise SpillError("disk full")

    monkeypatch.setattr(surgeon.spill, "put_many", fail)
    assert surgeon.cut(v, find_doom_spans(v, None, 2), "s", "") == []
    assert v.serialize() == jsoncodec.dumps(body)
    surgeon.commit()
    assert CutLog(conn).count() == 0


def test_a_spill_that_fails_for_one_item_cuts_only_the_others(monkeypatch):
    b, _ = builder()
    body = b.body()
    v = view_for("messages", body)
    spans = find_doom_spans(v, None, 2)
    assert len(spans) >= 2
    surgeon, conn = make()
    real = surgeon.spill.put_many

    def first_fails(contents):
        got = real(contents)
        return [SpillError("disk full")] + got[1:]

    monkeypatch.setattr(surgeon.spill, "put_many", first_fails)
    cuts = surgeon.cut(v, spans, "s", "")
    assert [c.tool_use_id for c in cuts] == [s.tool_use_id for s in spans[1:]]
    assert v.result(spans[0].tool_use_id).content == view_for("messages", body).result(spans[0].tool_use_id).content
    for c in cuts:
        assert surgeon.spill.has(c.original_sha256)


def test_nested_marker_kept_and_moving_marker_does_not_block_reapply():
    b = SessionBuilder(cwd=CWD)
    t = b.call("Bash", {"command": "x"}, [{"type": "text", "text": "y" * 3000, "cache_control": {"type": "ephemeral"}}], False)
    b.call("Bash", {"command": "x"}, "y" * 3000, False)
    for i in range(3):
        b.call("Glob", {"pattern": f"*{i}"}, "x")
    body = b.body()
    v = view_for("messages", body)
    surgeon, _ = make()
    cuts = surgeon.cut(v, find_doom_spans(v, None, 2), "s", "")
    assert [c.tool_use_id for c in cuts] == [t]
    assert v.result(t).content[0]["cache_control"] == {"type": "ephemeral"}
    assert validate_rewrite(body, v.doc) == []
    surgeon.commit()
    body2 = b.body()
    del body2["messages"][3]["content"][0]["content"][0]["cache_control"]  # the marker moved on
    v2 = view_for("messages", body2)
    assert surgeon.reapply(v2) == 1
    assert "cache_control" not in v2.result(t).content[0]
    assert validate_rewrite(body2, v2.doc) == []


def test_spill_dir_move_skips_reapply_rather_than_sending_other_bytes(tmp_path):
    b, ids = builder()
    v = view_for("messages", b.body())
    surgeon, conn = make()
    surgeon.cut(v, find_doom_spans(v, None, 2), "s", "")
    surgeon.commit()
    moved = Surgeon(SpillStore(tmp_path / "elsewhere"), CutLog(conn))
    assert moved.reapply(view_for("messages", b.body())) == 0


@pytest.mark.parametrize("endpoint", ["chat", "responses"])
def test_openai_formats(endpoint):
    from scalpel_desktop.surgery.doom import DoomSpan

    big = "z" * 4000
    if endpoint == "chat":
        doc = {"model": "m", "messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": big}]}]}
    else:
        doc = {"model": "m", "input": [
            {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": big}]}
    v = view_for(endpoint, doc)
    surgeon, _ = make()
    cuts = surgeon.cut(v, [DoomSpan("c1", "stale_large", 1200, 2, 9)], "s", "")
    assert len(cuts) == 1 and validate_rewrite(doc, v.doc) == []
    surgeon.commit()
    v2 = view_for(endpoint, copy.deepcopy(doc))
    assert surgeon.reapply(v2) == 1 and v2.serialize() == v.serialize()


def test_reapply_adopting_the_previous_view_gives_the_same_bytes():
    from scalpel_desktop.pipeline.parse_reuse import ParseReuse

    b, ids = builder()
    surgeon, _ = make()
    raw1 = jsoncodec.dumps(b.body())
    reuse = ParseReuse(min_bytes=0)
    p1 = reuse.parse(raw1)
    v1 = view_for("messages", p1.doc)
    cuts = surgeon.cut(v1, find_doom_spans(v1, None, 2), "s", "")
    surgeon.commit(cuts[:1])  # the second cut never committed (say its body failed validation)
    b.call("Glob", {"pattern": "*.md"}, "README.md")
    raw2 = jsoncodec.dumps(b.body())
    v2 = view_for("messages", reuse.parse(raw2).doc, previous=v1)
    assert v2.reused_units > 0
    assert surgeon.reapply(v2, previous=v1) == 1
    fresh = view_for("messages", jsoncodec.loads(raw2))
    assert surgeon.reapply(fresh) == 1
    assert v2.serialize() == fresh.serialize()
    assert v2.unit_hashes() == fresh.unit_hashes()
    assert validate_rewrite(jsoncodec.loads(raw2), v2.doc) == []
    assert v2.result(cuts[1].tool_use_id).content == view_for("messages", jsoncodec.loads(raw2)).result(cuts[1].tool_use_id).content
    # the adopted unit is shared with the previous rewrite, the original documents are untouched
    assert jsoncodec.dumps(p1.doc) == raw1


def test_a_spill_the_disk_refuses_is_remembered_until_one_lands(tmp_path):
    """What the runtime's status says as "spill failing" (no spill, no cut). A file where the spill
    folder should be: refused even to root, unlike a folder made read-only with chmod."""
    spill_dir = tmp_path / "spill"
    spill_dir.write_text("not a folder")
    b, _ = builder()
    v = view_for("messages", b.body())
    surgeon = Surgeon(SpillStore(spill_dir), CutLog(db.connect()))
    assert surgeon.spill_problem is None
    assert surgeon.cut(v, find_doom_spans(v, None, 2), "s", "") == []
    assert surgeon.spill_problem and "cannot write spill file" in surgeon.spill_problem
    spill_dir.unlink()
    v = view_for("messages", b.body())
    assert surgeon.cut(v, find_doom_spans(v, None, 2), "s", "")
    assert surgeon.spill_problem is None


def test_a_spill_that_is_only_slow_is_not_a_disk_problem(monkeypatch):
    from scalpel_desktop.surgery.surgeon import SpillSlow

    b, _ = builder()
    v = view_for("messages", b.body())
    surgeon, _ = make()
    monkeypatch.setattr(surgeon, "_spill", lambda contents: [SpillSlow("spill not on disk within 50 ms")] * len(contents))
    assert surgeon.cut(v, find_doom_spans(v, None, 2), "s", "") == []
    assert surgeon.spill_problem is None
