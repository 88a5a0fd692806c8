"""The observing stage that feeds the tool inventory. Changes nothing.

It runs before the tool filter so it sees the client's own declarations. The
request thread only takes references (a shallow copy of the message list);
the scan runs after the response (``on_response``, off the request path) and
only its result - a few names, ids and sizes - goes to the tools' background
writer for the database: a queued job that held the message list kept the
request's whole document alive until the writer got to it, and after a burst
of first sightings the writer's backlog held dozens of them (issue 12). The
result is queued pickled, one allocation, so that its ids, taken from the
document, do not keep that document's memory pools in use either.
"""

from __future__ import annotations

import pickle

from scalpel_desktop.exchange import Exchange
from scalpel_desktop.tools.inventory import InventoryRecorder
from scalpel_desktop.tools.store import ToolStore
from scalpel_desktop.tools.writer import BackgroundWriter
from scalpel_desktop.wire.identity import conversation_key


class InventoryStage:
    name = "inventory"
    mutates = False

    def __init__(self, store: ToolStore, *, writer: BackgroundWriter | None = None):
        self.recorder = InventoryRecorder(store)
        self.writer = writer or BackgroundWriter()

    def on_request(self, ex: Exchange) -> None:
        req = ex.request
        if req.endpoint not in ("messages", "chat"):
            return
        doc = ex.doc
        if not isinstance(doc, dict):
            return
        key = ex.key or conversation_key(req.headers, doc)
        messages = doc.get("messages")
        snapshot = {"tools": doc.get("tools"), "messages": list(messages) if isinstance(messages, list) else []}
        model = doc.get("model") if isinstance(doc.get("model"), str) else ""
        ex.inventory = (key.session_id, key.agent_id, snapshot, req.client, model, req.received_at)

    def on_turn(self, ex: Exchange) -> None:
        """A dropped conversation recorded from its new messages (``surgery/ghost_turn.py``): the
        recorder scans a conversation from its last message on, so the head is left out (None)."""
        turn, req, key = ex.turn, ex.request, ex.key
        msgs = turn.doc["messages"]
        snapshot = {"tools": turn.doc.get("tools"), "messages": [None] * (turn.ghost.units - 1) + list(msgs)}
        ex.inventory = (key.session_id, key.agent_id, snapshot, req.client, ex.model, req.received_at)

    def on_response(self, ex: Exchange) -> None:
        job, ex.inventory = ex.inventory, None
        if job is not None:  # one bytes object queued: not thousands of the document's id strings
            self.writer.submit(self.recorder.write_packed, pickle.dumps(self.recorder.prepare(*job)))
