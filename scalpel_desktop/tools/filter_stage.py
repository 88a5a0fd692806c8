"""The mutating stage that applies the session's pinned tool removals.

Runs before surgery. It changes a body only when the session's pinned set
removes something and the body round-trips through the codec byte for byte;
on any doubt it leaves the body alone. It edits ``ex.doc`` in place (new
``tools`` list, new skill-listing message) and serializes once, so a later
mutating stage that builds from ``ex.doc`` keeps the change.

Realized savings are recorded only after the response: tokens really not sent
(the bytes removed times the conversation's tokens per byte measured from its
usage, ``ex.token_ratio``), priced at the tier that request was billed at (``tools/realized.py``), into
``ex.realized`` (summed by the ledger recorder) and the
``tool_filter_savings`` table.

Construction (both tool stages share one store and one writer)::

    inventory, tool_filter = tool_stages(config)          # or tool_stages(config, db_path=...)
    stages = [Identify(), inventory, tool_filter, <surgery...>, LedgerRecorder(ledger)]
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Callable

from scalpel_desktop.accounting.prices import PriceTable
from scalpel_desktop.accounting.token_ratio import for_request
from scalpel_desktop.config import setting
from scalpel_desktop.exchange import Exchange, Realized, ToolFilterNote
from scalpel_desktop.tools.filter import filter_request
from scalpel_desktop.tools.inventory_stage import InventoryStage
from scalpel_desktop.tools.pins import SessionPins
from scalpel_desktop.tools.realized import billed_tier, price
from scalpel_desktop.tools.store import ToolStore
from scalpel_desktop.tools.writer import BackgroundWriter
from scalpel_desktop.wire.identity import conversation_key
from scalpel_desktop.wire.jsoncodec import dumps, round_trips
from scalpel_desktop.wire.layout import round_trips_by_layout

log = logging.getLogger("scalpel.tools")


class ToolFilterStage:
    name = "tool_filter"
    mutates = True

    def __init__(self, store: ToolStore, enabled: Callable[[], bool], *,
                 writer: BackgroundWriter | None = None, prices: Any = None,
                 wait_s: Callable[[], float] | None = None):
        """``wait_s``: how long a request may wait for its session's pin to be stored (the
        ``write_wait_ms`` setting); None waits until it is (tests that need the pin at once)."""
        self.store = store
        self.pins = SessionPins(store, enabled, wait_s=wait_s)
        self.writer = writer or BackgroundWriter()
        self._prices = prices

    def may_defer(self, request: Any, skeleton: Any) -> bool:
        """Would this first sighting surely go out unfiltered (``pipeline/lane.py``)?"""
        if request.api != "anthropic" or request.endpoint != "messages":
            return True
        return self.pins.empty_at_once(skeleton().key.session_id, now=request.received_at)

    def on_turn(self, ex: Exchange) -> None:
        """A dropped conversation recorded from its new messages (``surgery/ghost_turn.py``): the lane
        let it through only when its session's pin was known to be empty (``may_defer``): nothing to do."""

    def on_request(self, ex: Exchange) -> None:
        req = ex.request
        if req.api != "anthropic" or req.endpoint != "messages":
            return
        doc = ex.doc
        if not isinstance(doc, dict) or not isinstance(doc.get("messages"), list):
            return
        key = ex.key or conversation_key(req.headers, doc)
        mid = any(isinstance(m, dict) and m.get("role") == "assistant" for m in doc["messages"])
        pin = self.pins.pin_for(key.session_id, mid_session=mid, now=req.received_at)
        if pin is None:  # the database did not answer in time: sent as it came (pinned empty later)
            ex.tool_filter = ToolFilterNote([], {}, "session pin not stored in time: sent unfiltered")
            return
        if not pin.names:
            return
        result = filter_request(doc, pin.names)
        note = ToolFilterNote(sorted(pin.names), dict(result.kept), result.left_alone or "")
        ex.tool_filter = note
        if not result.changed:
            return
        # The messages are already proven to be their own bytes by parse-reuse's layout:
        # re-serialize only the rest (a 2.9 MB body would otherwise be dumped twice here).
        if ex.new_body is None and not round_trips_by_layout(req.body, doc, ex.layout, round_trips):
            note.left_alone = "body does not round-trip through the codec"
            return
        for k in ("tools", "messages"):
            if k in result.doc and result.doc[k] is not doc.get(k):
                doc[k] = result.doc[k]
        before = len(ex.new_body) if ex.new_body is not None else len(req.body)
        ex.new_body = dumps(doc)
        note.removed = [(r.name, r.tokens) for r in result.removed]
        note.bytes_removed = max(0, before - len(ex.new_body))
        tokens = result.tokens
        ex.decision.add("filtered", f"tool filter: {len(result.removed)} declaration(s) not sent", tokens)
        ex.decision.figures["tool_filter_tokens"] = tokens

    def on_response(self, ex: Exchange) -> None:
        note = ex.tool_filter
        if note is None or not note.removed or ex.new_body is None:
            return
        resp = ex.response
        if resp is None or resp.usage is None or resp.status >= 400:
            return  # not billed: nothing was saved
        tier = billed_tier(resp.usage)
        rates = self._rates(ex.model)
        if rates is not None and hasattr(rates, "for_prompt"):
            rates = rates.for_prompt(resp.usage.prompt_tokens)  # long-context tiers
        total_tokens, total_usd, rows = 0, 0.0, []
        key = ex.key
        # Tokens not sent: the bytes the filter removed x the conversation's measured tokens
        # per byte, split across the declarations by their estimated sizes.
        ratio = for_request(ex.token_ratio, resp.usage.prompt_tokens, len(ex.body_to_send()))
        measured = ratio.tokens(note.bytes_removed)
        weight = sum(t for _, t in note.removed) or 1
        for name, estimated in note.removed:
            tokens = int(round(measured * estimated / weight))
            usd = price(tokens, tier, rates)
            total_tokens += tokens
            total_usd += usd or 0.0
            rows.append((resp.finished_at, key.session_id if key else "", key.agent_id if key else "",
                         ex.model, name, tokens, tier, usd))
        note.realized = {"tokens": total_tokens, "usd": total_usd if rates is not None else None, "tier": tier}
        prov = {"tier": "usage", "tokens": ratio.method, "bytes": note.bytes_removed,
                **{k: v for k, v in ratio.provenance().items() if k != "method"}}
        ex.realized.append(Realized("tool_filter", total_tokens, total_usd, prov))
        self.writer.submit(self.store.add_savings, rows)

    def _rates(self, model: str) -> Any:
        try:
            if self._prices is None:
                self._prices = PriceTable.load()
            return self._prices.rates(model)
        except Exception:  # noqa: BLE001 - an unknown model is priced as unknown, not guessed
            log.debug("tools: no price for model %r", model)
            return None


    def close(self, timeout: float = 5.0) -> None:
        """Flush pending writes (inventory rows, realized savings, pins); the runtime calls it on stop."""
        self.writer.flush(timeout)
        self.pins.close(timeout)


def tool_stages(config: Any, *, db_path: Path | None = None, prices: Any = None,
                enabled: Callable[[], bool] | None = None) -> tuple[Any, ToolFilterStage]:
    """(InventoryStage, ToolFilterStage) sharing one store and one background writer.

    ``enabled`` says whether the filter is on for sessions starting now; default:
    ``config.get("tool_filter")`` read live (a runtime may pass ``lambda: runtime.setting("tool_filter")``
    so start-up overrides count too)."""
    store = ToolStore.open(db_path)
    writer = BackgroundWriter()
    if enabled is None:
        def enabled() -> bool:
            return bool(config.get("tool_filter"))

    def wait_s() -> float:
        return int(setting(config, "write_wait_ms")) / 1000.0

    return InventoryStage(store, writer=writer), ToolFilterStage(store, enabled, writer=writer, prices=prices,
                                                                 wait_s=wait_s)
