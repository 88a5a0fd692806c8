"""The stage that feeds the tool inventory: what it hands to the background writer, and when not.

It takes its snapshot on the request and hands it to the writer after the response
(``through``): the writer's scan never competes with a request on its way."""

from __future__ import annotations

from scalpel_desktop.exchange import ApiRequest, Exchange
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


def test_it_submits_the_declarations_a_copy_of_the_messages_and_the_request_facts(tmp_path):
    stage, writer = stage_with(tmp_path)
    doc = body([tool("Bash"), tool("Read")], turns=1, session="s-1")  # the session in metadata.user_id
    ex = Exchange(request(doc, agent="a-2", received_at=1_800_000_123.0))
    through(stage, ex)
    [(fn, (session, agent, snapshot, client, model, now))] = writer.jobs
    assert fn == stage.recorder.record
    assert (session, agent, now) == ("s-1", "a-2", 1_800_000_123.0)
    assert client == "claude-cli/2.1.332 (external, sdk-cli)" and model == doc["model"]
    assert [t["name"] for t in snapshot["tools"]] == ["Bash", "Read"]
    assert snapshot["messages"] == ex.doc["messages"]
    ex.doc["messages"].append({"role": "user", "content": "later"})  # a later stage changing the list
    assert len(snapshot["messages"]) == len(doc["messages"])


def test_the_key_an_earlier_stage_found_is_used(tmp_path):
    stage, writer = stage_with(tmp_path)
    ex = Exchange(request(body([tool("Bash")]), session="from-header"))
    ex.key = ConversationKey("from-identify", "sub")
    through(stage, ex)
    assert writer.jobs[0][1][:2] == ("from-identify", "sub")


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
    [(_, (_, _, snapshot, _, model, _))] = writer.jobs
    assert snapshot["messages"] == [] and model == ""


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
