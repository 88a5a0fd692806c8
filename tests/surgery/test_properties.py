"""Property tests over random Claude-Code-shaped sessions (hypothesis).

For every generated session: a rewrite by the surgeon always validates; every
stub's spill file holds exactly the original; after a "restart" (a fresh
Surgeon and CutLog on the same database) later requests carry byte-identical
stubs; an empty result elsewhere in the history never stops cutting.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scalpel_desktop.store import db
from scalpel_desktop.store.spill import SpillStore
from scalpel_desktop.store.cutlog import CutLog
from scalpel_desktop.surgery.doom import find_doom_spans, is_stub
from scalpel_desktop.surgery.surgeon import Surgeon
from scalpel_desktop.surgery.testing import SessionBuilder, file_text
from scalpel_desktop.surgery.validate import validate_rewrite
from scalpel_desktop.wire import jsoncodec
from scalpel_desktop.pipeline.parse_reuse import ParseReuse
from scalpel_desktop.wire.formats import view_for

CWD = "/home/user/proj"
ACTIONS = ("read", "read", "edit", "write", "bash_ok", "bash_fail", "parallel", "agent", "ask", "snapshot",
           "empty", "grep_same", "text", "toolsearch", "big_fetch", "cat")

step = st.tuples(st.sampled_from(ACTIONS), st.integers(0, 4), st.integers(5, 120))
sessions = st.lists(step, min_size=40, max_size=55)
configs = st.fixed_dictionaries({
    "keep_recent": st.integers(0, 5),
    "failed_age_messages": st.integers(1, 15),
    "stale_min_tokens": st.sampled_from([200, 1000]),
    "stale_age_messages": st.integers(2, 25),
    "min_cut_tokens": st.sampled_from([120, 200, 400]),
    "cut_mcp_results": st.booleans(),
})


def play(b: SessionBuilder, steps) -> None:
    for n, (action, f, size) in enumerate(steps):
        path = f"{CWD}/src/m{f}.py"
        if action == "read":
            b.call("Read", {"file_path": path}, file_text(path, size, salt=str(n % 3)))
        elif action == "edit":
            b.call("Edit", {"file_path": path, "old_string": "a", "new_string": "b"}, f"The file {path} has been updated.")
        elif action == "write":
            b.call("Write", {"file_path": path, "content": "x"}, f"File created successfully at: {path}")
        elif action == "bash_ok":
            b.call("Bash", {"command": f"pytest -k t{f}"}, "passed\n" * size, False)
        elif action == "bash_fail":
            b.call("Bash", {"command": f"pytest -k t{f}"}, "Exit code 1\n" + f"E failure {n}\n" * size, True)
        elif action == "parallel":
            b.calls([("Read", {"file_path": path}, file_text(path, size), None),
                     ("Grep", {"pattern": "x"}, "m.py:1:x\n" * size, None),
                     ("Bash", {"command": "ls"}, "a\nb\n" * size, False)])
        elif action == "agent":
            b.call("Agent", {"prompt": "look"}, [{"type": "text", "text": "report line\n" * size}])
        elif action == "ask":
            b.call("AskUserQuestion", {"questions": []}, "User has answered: yes " * size)
        elif action == "snapshot":
            b.call("mcp__playwright__browser_snapshot", {}, f"- page {n}\n" * size)
        elif action == "empty":
            b.call("Bash", {"command": "true"}, "", False)
        elif action == "grep_same":
            b.call("Grep", {"pattern": "TODO"}, "src/a.py:3: TODO\n" * size)
        elif action == "text":
            b.text(f"step {n}")
        elif action == "toolsearch":
            b.call("ToolSearch", {"query": "select:WebFetch"}, [{"type": "tool_reference", "tool_name": "WebFetch"}])
        elif action == "big_fetch":
            b.call("WebFetch", {"url": f"https://e/{n}"}, "lorem ipsum " * size * 10)
        elif action == "cat":
            b.call("Bash", {"command": f"cat src/m{f}.py"}, file_text(path, size))


def fresh_parts(root: Path):
    conn = db.connect(root / "ledger.sqlite3")
    # durable=False: no fsyncs here (thousands of them would dominate the run); tests/store covers them
    return Surgeon(SpillStore(root / "spill", durable=False), CutLog(conn)), conn


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(first=sessions, second=st.lists(step, min_size=1, max_size=15), cfg=configs, tier=st.sampled_from([1, 2]))
def test_surgery_invariants(first, second, cfg, tier):
    root = Path(tempfile.mkdtemp(prefix="scalpel-prop-"))
    b = SessionBuilder(cwd=CWD)
    play(b, first)
    body = b.body()
    raw = jsoncodec.dumps(body)
    reuse = ParseReuse(min_bytes=0)
    parsed = reuse.parse(raw)
    view = view_for("messages", parsed.doc)
    spans = find_doom_spans(view, cfg, tier)
    surgeon, conn = fresh_parts(root)
    cuts = surgeon.cut(view, spans, "s1", "")
    # valid, and only the spans were touched
    assert validate_rewrite(jsoncodec.loads(raw), view.doc) == []
    assert {c.tool_use_id for c in cuts} == {s.tool_use_id for s in spans}
    for s in spans:
        assert s.died_at_unit <= len(view.units) - 1 and s.unit_index < s.died_at_unit
    # recoverable: every spill file holds exactly the original content
    original = view_for("messages", jsoncodec.loads(raw))
    for c in cuts:
        assert surgeon.spill.get(c.original_sha256) == jsoncodec.dumps(original.result(c.tool_use_id).content)
        assert is_stub(view.result(c.tool_use_id).content)
    surgeon.commit()
    sent = jsoncodec.loads(view.serialize())
    conn.close()

    # restart, then the conversation goes on under a new session id
    play(b, second)
    later_body = b.body()
    restarted, conn2 = fresh_parts(root)
    later = view_for("messages", jsoncodec.loads(jsoncodec.dumps(later_body)))
    assert restarted.reapply(later) == len(cuts)
    k = len(sent["messages"]) - 1  # the last message carried the moving marker
    assert jsoncodec.dumps(later.doc["messages"][:k]) == jsoncodec.dumps(sent["messages"][:k])
    assert validate_rewrite(later_body, later.doc) == []
    # the same through the incremental path: previous parse and view re-used, rewrites adopted
    later_raw = jsoncodec.dumps(later_body)
    incremental = view_for("messages", reuse.parse(later_raw).doc, previous=view)
    assert restarted.reapply(incremental, previous=view) == len(cuts)
    assert incremental.serialize() == later.serialize()
    assert incremental.unit_hashes() == later.unit_hashes()
    conn2.close()


@settings(max_examples=50, deadline=None)
@given(steps=sessions, where=st.integers(0, 30))
def test_an_empty_result_elsewhere_does_not_stop_cuts(steps, where):
    b = SessionBuilder(cwd=CWD)
    play(b, steps[:where])
    b.call("Bash", {"command": "true"}, "", False)  # Claude Code sends an empty result for a silent command
    b.call("Read", {"file_path": f"{CWD}/dead.py"}, file_text("dead", 80))
    b.call("Edit", {"file_path": f"{CWD}/dead.py"}, "ok")
    play(b, steps[where:])
    for i in range(3):
        b.call("Glob", {"pattern": f"*{i}"}, "x")
    body = b.body()
    view = view_for("messages", body)
    spans = find_doom_spans(view, {"keep_recent": 3}, 1)
    assert spans
    root = Path(tempfile.mkdtemp(prefix="scalpel-prop-"))
    surgeon, conn = fresh_parts(root)
    cuts = surgeon.cut(view, spans, "s", "")
    assert len(cuts) == len(spans)
    assert validate_rewrite(body, view.doc) == []
    conn.close()


def test_generator_produces_every_kind_of_step():
    """The strategies above really produce what they claim (and doom finds every kind)."""
    b = SessionBuilder(cwd=CWD)
    play(b, [(a, i % 3, 120) for i, a in enumerate(ACTIONS * 3)] + [("text", 0, 5)] * 12)
    body = b.body()
    names = {c["name"] for m in body["messages"] if isinstance(m["content"], list) for c in m["content"] if c.get("type") == "tool_use"}
    assert {"Read", "Edit", "Write", "Bash", "Grep", "Agent", "AskUserQuestion", "ToolSearch", "WebFetch",
            "mcp__playwright__browser_snapshot"} <= names
    view = view_for("messages", body)
    kinds = {s.kind for s in find_doom_spans(view, {"keep_recent": 0, "failed_age_messages": 2, "stale_age_messages": 999}, 2)}
    kinds |= {s.kind for s in find_doom_spans(view, {"keep_recent": 0}, 2)}
    assert kinds == {"superseded_read", "duplicate", "failed", "dead_snapshot", "stale_large"}
