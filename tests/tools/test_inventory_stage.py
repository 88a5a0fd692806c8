"""The stage that feeds the tool inventory: what it hands to the background writer, and when not.

It takes its snapshot on the request, scans it after the response and hands the writer only
what the scan found (``through``): nothing competes with a request on its way, and no queued
write keeps a request's document alive."""

from __future__ import annotations

import pickle

from scalpel_desktop.exchange import ApiRequest, Exchange
from scalpel_desktop.tools.inventory import calls_in
from scalpel_desktop.tools.inventory_stage import InventoryStage
from scalpel_desktop.tools.store import ToolStore
from scalpel_desktop.wire.identity import ConversationKey
from scalpel_desktop.wire.jsoncodec import dumps
from tests.tools.bodies import body, request, tool


class Recorded:
    """A writer that keeps what was submitted instead of running it."""

    def __init__(self):
        self.jobs: list[tuple] = []

    def submit(self, fn, *args):
        self.jobs.append((fn, args))


def through(stage: InventoryStage, ex: Exchange) -> None:
    """The request, then its response: the writer gets the record only after the response."""
    before = len(stage.writer.jobs) if isinstance(stage.writer, Recorded) else None
    stage.on_request(ex)
    if before is not None:
        assert len(stage.writer.jobs) == before  # nothing handed to the writer while the request is on its way
    stage.on_response(ex)


def stage_with(tmp_path) -> tuple[InventoryStage, Recorded]:
    writer = Recorded()
    return InventoryStage(ToolStore.open(tmp_path / "t.sqlite3"), writer=writer), writer


def test_it_submits_the_declarations_the_calls_and_the_request_facts_and_nothing_of_the_document(tmp_path):
    stage, writer = stage_with(tmp_path)
    doc = body([tool("Bash"), tool("Read")], turns=1, session="s-1")  # the session in metadata.user_id
    ex = Exchange(request(doc, agent="a-2", received_at=1_800_000_123.0))
    stage.on_request(ex)
    snapshot = ex.inventory[2]
    ex.doc["messages"].append({"role": "user", "content": "later"})  # a later stage changing the list
    assert len(snapshot["messages"]) == len(ex.doc["messages"]) - 1 == len(doc["messages"])  # its own copy
    stage.on_response(ex)
    [(fn, (packed,))] = writer.jobs
    assert fn == stage.recorder.write_packed and isinstance(packed, bytes)  # one allocation, nothing of the document
    session, client, model, now, declared, calls, targets = pickle.loads(packed)
    assert (session, now) == ("s-1", 1_800_000_123.0) and ("s-1", "a-2") in stage.recorder._scanned
    assert client == "claude-cli/2.1.332 (external, sdk-cli)" and model == doc["model"]
    assert [d.name for d in declared if d.kind != "skill"] == ["Bash", "Read"]
    assert calls == calls_in(snapshot["messages"]) and calls and ex.inventory is None


def _job(writer: Recorded, i: int = 0) -> tuple:
    return pickle.loads(writer.jobs[i][1][0])


def test_the_key_an_earlier_stage_found_is_used(tmp_path):
    stage, writer = stage_with(tmp_path)
    ex = Exchange(request(body([tool("Bash")]), session="from-header"))
    ex.key = ConversationKey("from-identify", "sub")
    through(stage, ex)
    assert _job(writer)[0] == "from-identify" and ("from-identify", "sub") in stage.recorder._scanned


def test_only_messages_and_chat_bodies_that_parse(tmp_path):
    stage, writer = stage_with(tmp_path)
    for endpoint in ("count_tokens", "responses", "other"):
        req = ApiRequest("POST", "/v1/x", "", "anthropic", endpoint, {}, dumps(body([tool("Bash")])), 0.0)
        through(stage, Exchange(req))
    through(stage, Exchange(request(None, raw=b"not json")))
    assert writer.jobs == []
    chat = ApiRequest("POST", "/v1/chat/completions", "", "openai", "chat", {},
                      dumps({"model": 5, "messages": "odd", "tools": []}), 0.0)
    through(stage, Exchange(chat))
    assert len(writer.jobs) == 1
    _, _, model, _, declared, calls, _ = _job(writer)
    assert calls == [] and declared is None and model == ""


def test_with_the_real_writer_the_inventory_lands_in_the_store(tmp_path):
    store = ToolStore.open(tmp_path / "t.sqlite3")
    stage = InventoryStage(store)
    try:
        through(stage, Exchange(request(body([tool("Bash"), tool("mcp__gh__issue")], session="s-9"))))
        assert stage.writer.flush()
        names = {n for (n,) in store.query("SELECT name FROM tool_declarations")}
        assert {"Bash", "mcp__gh__issue"} <= names
        assert [tuple(r) for r in store.query("SELECT session, requests FROM tool_sessions")] == [("s-9", 1)]
    finally:
        stage.writer.close()
        store.close()
