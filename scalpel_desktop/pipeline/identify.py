"""The observing stage: conversation key, model, size estimate, project and context regions.
Changes nothing.

The key, the model and the size are read on the request (later stages need
them); the context regions (a walk over every message, for the ledger row and
the dashboard only) are measured after the response, off the request path.
"""

from __future__ import annotations

from scalpel_desktop.accounting.context_regions import measure, working_directory
from scalpel_desktop.accounting.tokens import estimate_tokens_bytes
from scalpel_desktop.exchange import Exchange
from scalpel_desktop.wire.identity import conversation_key


class Identify:
    name = "identify"
    mutates = False

    def on_request(self, ex: Exchange) -> None:
        doc = ex.doc
        if isinstance(doc, dict):
            ex.key = conversation_key(ex.request.headers, doc)
            model = doc.get("model")
            ex.model = model if isinstance(model, str) else ""
        # Size estimate from the raw bytes (cheap, no re-serialization).
        ex.tokens_before = estimate_tokens_bytes(len(ex.request.body))
        # What the dashboard names the session by.
        ex.project = working_directory(doc)

    def on_turn(self, ex: Exchange) -> None:
        """A dropped conversation recorded from its new messages (``surgery/ghost_turn.py``): the
        key and model are the skeleton's, the project and the head's tool results the ghost's."""
        turn = ex.turn
        ex.tokens_before = estimate_tokens_bytes(len(ex.request.body))
        ex.project = turn.ghost.project
        ex.regions = measure(ex.request.endpoint, turn.doc, len(ex.request.body), turn.ghost.head_results)

    def on_response(self, ex: Exchange) -> None:
        # The prompt's split by region (sizes only), for the ledger row: after the answer.
        if ex.regions is None:
            ex.regions = measure(ex.request.endpoint, ex.doc, len(ex.request.body))
        if ex.tokens_after is None:
            ex.tokens_after = (
                estimate_tokens_bytes(len(ex.new_body)) if ex.new_body is not None else ex.tokens_before
            )
