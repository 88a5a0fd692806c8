"""service/hook_logic.py: what each Claude Code hook decides, called directly.

The inputs are the ones captured from Claude Code 2.1.332 (tests/service/hook_inputs.py);
tests/service/test_hooks.py runs the same hooks as Claude Code does, in a child process.
"""

from __future__ import annotations

import json
import os
import time

import pytest

from scalpel_desktop.service import hook_logic
from tests.service.hook_inputs import NOTES, fixture
from tests.support import free_port


def _read_once(home):
    hook_logic.post_tool_use(fixture("hook-post-read.json", home))


def _denied(decision) -> bool:
    return decision is not None and decision["hookSpecificOutput"]["permissionDecision"] == "deny"


# -- the decisions on the captured inputs (moved from tests/service/test_hooks.py) -----------
def test_full_reread_of_unchanged_file_is_denied_when_the_log_shows_no_cut(isolated_home, project, ledger):
    _read_once(isolated_home)
    decision = hook_logic.pre_tool_use(fixture("hook-pre-read.json", isolated_home))
    assert _denied(decision)
    out = decision["hookSpecificOutput"]
    assert out["hookEventName"] == "PreToolUse"
    assert out["permissionDecisionReason"] == hook_logic.deny_reason(str(project / "notes.txt"))


def test_reread_allowed_when_the_proxy_cut_the_earlier_read(isolated_home, project, ledger):
    post = fixture("hook-post-read.json", isolated_home)
    hook_logic.post_tool_use(post)
    from scalpel_desktop.store.cutlog import CutLog, CutRecord

    CutLog(ledger).record(CutRecord(post["tool_use_id"], post["session_id"], "", time.time(), "stale_large", 900,
                                    "ab", 1, "cd"))  # the surgery log's own writer, as the proxy records a cut
    assert hook_logic.pre_tool_use(fixture("hook-pre-read.json", isolated_home)) is None


def test_reread_allowed_when_uncertain_without_a_surgery_log(isolated_home, project):
    _read_once(isolated_home)
    assert hook_logic.pre_tool_use(fixture("hook-pre-read.json", isolated_home)) is None


@pytest.mark.parametrize("change", ["edit_on_disk", "offset", "limit", "subagent", "edit_tool", "other_session", "compact"])
def test_reread_allowed(isolated_home, project, ledger, change):
    _read_once(isolated_home)
    pre = fixture("hook-pre-read.json", isolated_home)
    if change == "edit_on_disk":
        (project / "notes.txt").write_text(NOTES.replace("TODO", "DONE"))
    elif change in ("offset", "limit"):
        pre["tool_input"][change] = 2
    elif change == "subagent":
        pre = fixture("hook-pre-read-subagent.json", isolated_home)
    elif change == "edit_tool":
        hook_logic.post_tool_use(fixture("hook-post-edit.json", isolated_home))
    elif change == "other_session":
        pre["session_id"] = "another-session"
    elif change == "compact":
        start = fixture("hook-session-start.json", isolated_home)
        hook_logic.session_start({**start, "source": "compact"})
    assert hook_logic.pre_tool_use(pre) is None


def test_a_truncated_read_is_not_recorded(isolated_home, project, ledger):
    post = fixture("hook-post-read.json", isolated_home)
    post["tool_response"]["file"]["numLines"] = 2
    hook_logic.post_tool_use(post)
    assert hook_logic.pre_tool_use(fixture("hook-pre-read.json", isolated_home)) is None


# -- the pieces ----------------------------------------------------------------------------
@pytest.mark.parametrize("tool_input, full", [
    ({"file_path": "/a"}, True),
    ({"file_path": "/a", "offset": None, "limit": "", "pages": 0}, True),  # empty values are no range
    ({"file_path": "/a", "offset": 1}, False),
    ({"file_path": "/a", "limit": 10}, False),
    ({"file_path": "/a", "pages": "1-2"}, False),
])
def test_a_full_read_names_no_range(tool_input, full):
    assert hook_logic._is_full_read(tool_input) is full


@pytest.mark.parametrize("response, complete", [
    ({"type": "text", "file": {"numLines": 5, "totalLines": 5}}, True),
    ({"file": {"numLines": 6, "totalLines": 5}}, True),
    ({"type": "text", "file": {"numLines": 4, "totalLines": 5}}, False),  # truncated
    ({"type": "image", "file": {"numLines": 5, "totalLines": 5}}, False),
    ({"type": "text", "file": {"numLines": 5}}, False),  # cannot tell: not full
    ({"type": "text", "file": "notes"}, False),
    ("text", False),
    (None, False),
])
def test_a_read_is_complete_only_when_its_result_says_so(response, complete):
    assert hook_logic._response_was_complete(response) is complete


def test_a_fingerprint_is_the_files_size_mtime_and_hash(tmp_path, monkeypatch):
    import hashlib

    f = tmp_path / "f.txt"
    f.write_bytes(b"hello")
    fp = hook_logic.file_fingerprint(str(f))
    assert fp == {"size": 5, "mtime_ns": os.stat(f).st_mtime_ns, "sha256": hashlib.sha256(b"hello").hexdigest()}
    assert hook_logic.file_fingerprint(str(tmp_path / "missing")) is None
    assert hook_logic.file_fingerprint(str(tmp_path)) is None  # a directory
    monkeypatch.setattr(hook_logic, "MAX_HASH_BYTES", 4)
    assert hook_logic.file_fingerprint(str(f)) is None  # too big to hash on a hook's time


@pytest.mark.parametrize("session", ["../../etc/passwd", "a/b\\c", "é", "", "x" * 300])
def test_a_session_id_never_leaves_the_state_dir(isolated_home, session):
    path = hook_logic._session_file(session)
    assert path.parent == hook_logic.state_dir()
    assert path.name.endswith(".json") and len(path.stem) <= 128 and path.stem
    assert set(path.stem) <= set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")


def test_state_that_is_not_a_json_object_is_read_as_empty(isolated_home):
    path = hook_logic._session_file("s")
    path.parent.mkdir(parents=True)
    for text in ("[1, 2]", "not json", '"a string"'):
        path.write_text(text)
        assert hook_logic._load("s") == {}
    assert hook_logic._load("never-seen") == {}


def test_a_full_read_is_recorded_per_agent_with_its_fingerprint_and_id(isolated_home, project):
    post = fixture("hook-post-read.json", isolated_home)
    hook_logic.post_tool_use(post)
    hook_logic.post_tool_use({**post, "agent_id": "sub-1", "tool_use_id": "toolu_sub"})
    agents = hook_logic._load(post["session_id"])["agents"]
    path = str(project / "notes.txt")
    assert set(agents) == {"main", "sub-1"}
    assert agents["main"][path]["tool_use_id"] == post["tool_use_id"]
    assert agents["sub-1"][path]["tool_use_id"] == "toolu_sub"
    assert {k: agents["main"][path][k] for k in ("size", "mtime_ns", "sha256")} == hook_logic.file_fingerprint(path)
    assert oct(os.stat(hook_logic._session_file(post["session_id"])).st_mode & 0o777) == "0o600"


def test_an_edit_forgets_the_file_only_for_the_agent_that_edited_it(isolated_home, project, ledger):
    post = fixture("hook-post-read.json", isolated_home)
    hook_logic.post_tool_use(post)
    hook_logic.post_tool_use({**post, "agent_id": "sub-1"})
    edit = fixture("hook-post-edit.json", isolated_home)
    hook_logic.post_tool_use({**edit, "agent_id": "sub-1"})
    agents = hook_logic._load(post["session_id"])["agents"]
    assert str(project / "notes.txt") in agents["main"] and agents["sub-1"] == {}
    assert _denied(hook_logic.pre_tool_use(fixture("hook-pre-read.json", isolated_home)))


def test_a_later_partial_read_forgets_the_earlier_full_one(isolated_home, project, ledger):
    post = fixture("hook-post-read.json", isolated_home)
    hook_logic.post_tool_use(post)
    hook_logic.post_tool_use({**post, "tool_input": {**post["tool_input"], "offset": 2, "limit": 1}})
    assert hook_logic._load(post["session_id"])["agents"]["main"] == {}
    assert hook_logic.pre_tool_use(fixture("hook-pre-read.json", isolated_home)) is None


def test_a_notebook_edit_forgets_by_its_notebook_path(isolated_home, project):
    post = fixture("hook-post-read.json", isolated_home)
    path = str(project / "notes.txt")
    hook_logic.post_tool_use(post)
    hook_logic.post_tool_use({"session_id": post["session_id"], "tool_name": "NotebookEdit",
                              "tool_input": {"notebook_path": path}})
    assert path not in hook_logic._load(post["session_id"])["agents"]["main"]


@pytest.mark.parametrize("payload", [
    {"tool_name": "Read", "tool_input": {"file_path": "/x"}},  # no session
    {"session_id": 7, "tool_name": "Read", "tool_input": {"file_path": "/x"}},
    {"session_id": "s", "tool_name": "Read", "tool_input": "/x"},
    {"session_id": "s", "tool_name": "Read", "tool_input": {"file_path": ""}},
    {"session_id": "s", "tool_name": "Bash", "tool_input": {"command": "ls"}},
])
def test_inputs_without_a_file_write_no_state(isolated_home, payload):
    hook_logic.post_tool_use(payload)
    assert not hook_logic.state_dir().exists()


def test_pre_tool_use_looks_only_at_full_reads(isolated_home, project, ledger):
    _read_once(isolated_home)
    pre = fixture("hook-pre-read.json", isolated_home)
    assert _denied(hook_logic.pre_tool_use(pre))
    assert hook_logic.pre_tool_use({**pre, "tool_name": "Grep"}) is None
    assert hook_logic.pre_tool_use({**pre, "tool_input": {"file_path": 5}}) is None
    assert hook_logic.pre_tool_use({**pre, "session_id": None}) is None
    assert hook_logic.pre_tool_use({**pre, "tool_input": {**pre["tool_input"], "pages": "1"}}) is None


def test_a_file_gone_or_the_same_size_with_other_bytes_is_read_again(isolated_home, project, ledger):
    _read_once(isolated_home)
    pre = fixture("hook-pre-read.json", isolated_home)
    notes = project / "notes.txt"
    notes.write_text(NOTES.replace("TODO", "DONE"))  # same size, other bytes
    assert len(notes.read_bytes()) == len(NOTES)
    assert hook_logic.pre_tool_use(pre) is None
    notes.unlink()
    assert hook_logic.pre_tool_use(pre) is None


def test_a_rewrite_with_the_same_bytes_is_still_the_content_in_context(isolated_home, project, ledger):
    _read_once(isolated_home)
    (project / "notes.txt").write_text(NOTES)  # a new mtime, the same bytes
    os.utime(project / "notes.txt", ns=(1, 1))
    assert _denied(hook_logic.pre_tool_use(fixture("hook-pre-read.json", isolated_home)))


@pytest.mark.parametrize("tool_use_id", [None, "", 5])
def test_a_read_recorded_without_its_id_may_have_been_cut(isolated_home, project, ledger, tool_use_id):
    post = fixture("hook-post-read.json", isolated_home)
    hook_logic.post_tool_use({**post, "tool_use_id": tool_use_id})
    assert hook_logic.pre_tool_use(fixture("hook-pre-read.json", isolated_home)) is None


@pytest.mark.parametrize("source, kept", [("startup", True), ("resume", True), ("clear", False), ("compact", False)])
def test_session_start_forgets_reads_only_when_the_context_lost_them(isolated_home, project, source, kept):
    _read_once(isolated_home)
    start = fixture("hook-session-start.json", isolated_home)
    assert hook_logic.session_start({**start, "source": source}) is None  # autopilot off, no base URL: no message
    assert hook_logic._session_file(start["session_id"]).exists() is kept


def test_session_start_passes_on_the_guards_message(isolated_home, monkeypatch):
    port = free_port()  # nothing listens there
    monkeypatch.setenv("ANTHROPIC_BASE_URL", f"http://127.0.0.1:{port}")
    message = hook_logic.session_start({"session_id": "s", "source": "startup"})
    assert message is not None and f"127.0.0.1:{port}" in message and "scalpel start" in message


def test_the_deny_reason_names_the_file_and_the_way_out():
    reason = hook_logic.deny_reason("/p/a.py")
    assert "/p/a.py" in reason and "offset and limit" in reason
    assert json.loads(json.dumps(reason)) == reason


def test_the_keeper_events_reach_a_running_proxy_and_need_none():
    from scalpel_desktop import hooks_entry
    from scalpel_desktop.config import Config
    from scalpel_desktop.runtime import Runtime

    started = time.monotonic()
    assert hooks_entry.run("notification", {"session_id": "s1"}) is None  # no proxy: nothing, at once
    assert hooks_entry.run("session-end", {}) is None
    assert time.monotonic() - started < 2
    rt = Runtime(Config.load(), port=0).start()
    heard = []
    rt.register_action("keeper", lambda payload: heard.append(payload) or {"ok": True})
    try:
        hook_logic.keeper_event({"session_id": "s1"}, "waiting")
        hooks_entry.run("session-end", {"session_id": "s1"})
        hook_logic.keeper_event({"session_id": 7}, "end")  # not a session id: nothing sent
    finally:
        rt.stop()
    assert heard == [{"event": "waiting", "session": "s1"}, {"event": "end", "session": "s1"}]
