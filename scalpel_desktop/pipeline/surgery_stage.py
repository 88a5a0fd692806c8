"""The surgery stage: replay logged cuts, ask the economist, cut, validate.

For each API request with a conversation view:

1. the original must round-trip through the codec byte for byte (else the
   request is forwarded as it came: we could not change it without changing
   bytes we did not mean to);
2. conversations under an excluded working directory pass untouched;
3. every cut in the surgery log is re-applied, byte-identically, whatever the
   conversation key (a resumed conversation may arrive under a new one);
4. the doom spans are found (tier from the config), the economist decides
   which of them to cut now (``surgery/economist.py``), the surgeon spills and
   stubs them;
5. the rewrite is validated (``validate_rewrite``, and the emulated API's own
   request checks); on any doubt the original bytes go out.

``on_response`` tells the economist when the response ended (the TTL runs from
there) and prices the realized saving from the usage counts (SPEC 7): each
removed token at the rate its position was billed at in this request - cache
read, cache write, or plain input after the last cached point.

The stage keeps, per conversation, the previous request's analysis (unit
digests and sizes by unit content) so an unchanged prefix is not hashed again.
Everything the bench needs is injectable: config, spill, cut log, economist,
prices; times come from ``ApiRequest.received_at`` and
``ResponseResult.finished_at``. A replay that knows where the client rewrote
its history (a transcript's real usage shows the cache read stopping early)
but cannot show it in the bodies sets ``ex.notes["client_rewrite_at"]`` to
that message index before ``on_request``: the economist then treats the
request as the live proxy would have seen it.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from typing import Any

from scalpel_desktop.accounting.tokens import CHARS_PER_TOKEN_DEFAULT
from scalpel_desktop.pipeline.seam import Decision, Exchange
from scalpel_desktop.surgery.economist import Candidate, Economist, RequestShape, tool_changes_beta, ttl_seconds
from scalpel_desktop.wire.identity import conversation_key

log = logging.getLogger("scalpel.surgery")

ENDPOINTS = ("messages", "chat", "responses")


@dataclass
class _Sent:
    """What the stage remembers of one request until its response ends."""

    serial: int
    key: Any
    model: str
    stubs: list[tuple[str, float, int, str]] = field(default_factory=list)  # (id, position 0..1, tokens saved, new|replayed)
    rewrite_tokens: int = 0


class SurgeryStage:
    name = "surgery"
    mutates = True

    def __init__(self, config: Any, spill: Any, cutlog: Any, economist: Economist | None = None,
                 prices: Any = None):
        self.config = config
        self.spill = spill
        self.cutlog = cutlog
        if prices is None:
            from scalpel_desktop.accounting.prices import PriceTable

            prices = PriceTable.load()
        self.prices = prices
        self.economist = economist or Economist(config, prices)
        if self.economist.prices is None:
            self.economist.prices = prices
        from scalpel_desktop.surgery.surgeon import Surgeon

        self.surgeon = Surgeon(spill, cutlog)

    # ------------------------------------------------------------------ settings
    def _get(self, name: str) -> Any:
        getter = getattr(self.config, "get", None)
        if isinstance(self.config, dict):
            from scalpel_desktop.config import KEYS

            return self.config.get(name, KEYS[name].default)
        return getter(name)

    # ------------------------------------------------------------------ request
    def on_request(self, ex: Exchange) -> None:
        req = ex.request
        if req.endpoint not in ENDPOINTS or not req.body:
            return
        doc = ex.doc
        from scalpel_desktop.wire.view import view_for

        view = view_for(req.endpoint, doc)
        if view is None:
            return
        key = ex.key or conversation_key(req.headers, doc)
        ex.key = key
        model = ex.model or (doc.get("model") if isinstance(doc.get("model"), str) else "") or ""
        if self._excluded(view.cwd()):
            ex.decision = Decision("unchanged", "working directory excluded")
            return

        replayed = self._reapply(view)
        shape = self._shape(ex, view, key, model)
        from scalpel_desktop.surgery.doom import STUB_TOKENS, find_doom_spans

        spans = find_doom_spans(view, self.config, tier=int(self._get("tier")))
        candidates = [Candidate(s.tool_use_id, s.unit_index, s.tokens, STUB_TOKENS, s.kind) for s in spans]
        plan = self.economist.decide(shape, candidates, policy=str(self._get("policy")))
        cuts: list = []
        if plan.cut_ids:
            wanted = set(plan.cut_ids)
            chosen = [s for s in spans if s.tool_use_id in wanted]
            try:
                cuts = self.surgeon.cut(view, chosen, session=getattr(key, "session_id", ""),
                                        agent=getattr(key, "agent_id", ""))
            except Exception as e:  # noqa: BLE001 - no spill, no cut
                log.warning("cut failed, forwarding without new cuts: %s", e)
                self.surgeon.discard()
                return self._forward_original(ex, shape, f"cut failed: {type(e).__name__}: {e}", view)
        body = req.body
        if view.replaced:
            from scalpel_desktop.wire.jsoncodec import round_trips

            if not round_trips(req.body, view.original_doc):
                self.surgeon.discard(cuts)
                return self._forward_original(ex, shape, "body does not round-trip through the codec: forwarded as sent", view)
            body = view.serialize()
            problem = self._invalid(view, body)
            if problem:
                self.surgeon.discard(cuts)
                return self._forward_original(ex, shape, f"rewrite refused: {problem}", view)
            if cuts:
                self.surgeon.commit(cuts)
            ex.new_body = body
        serial = self.economist.record_sent(shape, view.unit_hashes(), plan.natural_break)
        sent = _Sent(serial, shape.key, model, rewrite_tokens=plan.rewrite_tokens if cuts else 0)
        sent.stubs = self._stub_positions(body, replayed, cuts)
        ex.notes["surgery"] = sent
        removed = sum(t for _, _, t, _ in sent.stubs)
        figures = dict(plan.figures)
        figures.update({"replayed": len(replayed), "new_cuts": len(cuts)})
        if cuts:
            figures["tokens_cut"] = sum(c.saved_tokens for c in cuts)
            figures["rewrite_tokens"] = plan.rewrite_tokens
            ex.decision = Decision("cut", plan.reason, removed, figures)
        else:
            reason = plan.reason
            if plan.cut_ids:
                reason = f"surgeon could not cut; {reason}"
            if replayed:
                reason = f"replayed {len(replayed)} earlier cuts; {reason}"
            ex.decision = Decision("unchanged", reason, removed, figures)

    def _forward_original(self, ex: Exchange, shape: RequestShape, reason: str, view: Any) -> None:
        """Fail open: the original bytes go out, and the economist remembers THEM as sent."""
        ex.new_body = None
        hashes = shape.unit_hashes
        if view.replaced:
            from scalpel_desktop.wire.view import view_for

            original = view_for(view.endpoint, view.original_doc)
            hashes = tuple(original.unit_hashes()) if original is not None else ()
        serial = self.economist.record_sent(shape, hashes)
        ex.notes["surgery"] = _Sent(serial, shape.key, shape.model)
        ex.decision = Decision("unchanged", reason[:300])

    def _reapply(self, view: Any) -> dict[str, int]:
        """Re-apply logged cuts; return {tool_use_id: tokens saved} of the replayed ones."""
        n = self.surgeon.reapply(view)
        if not n:
            return {}
        from scalpel_desktop.surgery.doom import STUB_TOKENS

        records = self.cutlog.lookup(list(view.replaced))
        return {tid: max(0, rec.tokens - STUB_TOKENS) for tid, rec in records.items() if tid in view.replaced}

    # ------------------------------------------------------------------ response
    def on_response(self, ex: Exchange) -> None:
        sent: _Sent | None = ex.notes.get("surgery")
        res = ex.response
        if sent is None or res is None:
            return
        usage = res.usage
        self.economist.record_finished(sent.key, sent.model, sent.serial, res.finished_at,
                                       usage.cache_read if usage else None)
        if usage is None or res.status >= 400 or not sent.stubs:
            return
        tokens, usd = self._realized(sent, usage)
        ex.notes.setdefault("realized", []).append({"kind": "surgery", "tokens": tokens, "usd": usd})

    # ------------------------------------------------------------------ helpers
    def _excluded(self, cwd: str | None) -> bool:
        dirs = self._get("exclude_dirs") or []
        if not cwd or not dirs:
            return False
        cwd_n = os.path.normpath(os.path.expanduser(cwd))
        for d in dirs:
            d_n = os.path.normpath(os.path.expanduser(str(d)))
            if cwd_n == d_n or cwd_n.startswith(d_n.rstrip("/") + "/"):
                return True
        return False

    def _shape(self, ex: Exchange, view: Any, key: Any, model: str) -> RequestShape:
        tokens_total = ex.tokens_before or int(len(ex.request.body) / CHARS_PER_TOKEN_DEFAULT)
        unit_tokens = unit_blocks = None
        if str(self._get("policy")) == "payback":
            from scalpel_desktop.wire.jsoncodec import dumps

            unit_tokens = [int(len(dumps(u.raw)) / CHARS_PER_TOKEN_DEFAULT) for u in view.units]
            unit_blocks = [len(c) if isinstance(c := (u.raw.get("content") if isinstance(u.raw, dict) else None), list)
                           else 1 for u in view.units]
        return RequestShape(
            key=(key.session_id, key.agent_id) if hasattr(key, "session_id") else key,
            model=model,
            at=ex.request.received_at,
            unit_hashes=tuple(view.unit_hashes()),
            tools_hash=view.tools_hash(),
            system_hash=view.system_hash(),
            settings_hash=view.settings_hash(),
            ttl_s=self._ttl_s(view),
            tool_changes_ok=tool_changes_beta(ex.request.headers),
            unit_tokens=unit_tokens,
            unit_blocks=unit_blocks,
            total_tokens=tokens_total,
            rewrite_at=_int_or_none(ex.notes.get("client_rewrite_at")),
        )

    @staticmethod
    def _ttl_s(view: Any) -> float:
        """The TTL of the message entries (the ones a cut touches); unsure: the longer."""
        if view.endpoint != "messages":
            doc = view.doc
            return 86400.0 if doc.get("prompt_cache_retention") == "24h" else 3600.0
        bps = view.breakpoints()
        msg = [b.ttl for b in bps if b.region in ("messages", "auto")]
        if msg:
            return ttl_seconds("1h" if "1h" in msg else "5m")
        return ttl_seconds(view.ttl())

    def _invalid(self, view: Any, body: bytes) -> str:
        try:
            from scalpel_desktop.surgery.validate import validate_rewrite
        except ImportError:
            return "no validator available"
        try:
            problems = validate_rewrite(view.original_doc, view.doc)
        except Exception as e:  # noqa: BLE001
            return f"validator error {type(e).__name__}: {e}"
        if problems:
            return "; ".join(str(p) for p in problems)[:300] if not isinstance(problems, str) else problems
        return _api_problem(view)

    @staticmethod
    def _stub_positions(body: bytes, replayed: dict[str, int], cuts: list) -> list[tuple[str, float, int, str]]:
        """Each stub's relative position (0..1) in the sent body, and the tokens it saves."""
        size = max(1, len(body))
        items = [(tid, saved, "replayed") for tid, saved in replayed.items()]
        items += [(c.tool_use_id, c.saved_tokens, "new") for c in cuts]
        out = []
        for tid, saved, kind in items:
            pos = body.find(b'"tool_use_id":"' + tid.encode("utf-8") + b'"')
            if pos < 0:
                pos = body.find(b'"' + tid.encode("utf-8") + b'"')
            out.append((tid, (pos if pos >= 0 else size) / size, int(saved), kind))
        return out

    def _realized(self, sent: _Sent, usage: Any) -> tuple[int, float]:
        """Tokens and dollars saved, each token at the rate its position was billed at (SPEC 7)."""
        rates = self.prices.rates(sent.model).for_prompt(usage.prompt_tokens)
        total = usage.prompt_tokens
        read_end = usage.cache_read
        w1h_end = read_end + usage.cache_write_1h
        w_end = w1h_end + usage.cache_write_5m
        tokens = 0
        usd = 0.0
        for _, frac, saved, _ in sent.stubs:
            at = frac * total
            if at < read_end:
                rate = rates.cache_read
            elif at < w1h_end:
                rate = rates.write_1h
            elif at < w_end:
                rate = rates.write_5m
            else:
                rate = rates.input
            tokens += saved
            usd += saved * rate
        if sent.rewrite_tokens:
            # A warm (payback) cut re-wrote what would have been read: charge it here.
            write = rates.write_1h if usage.cache_write_1h >= usage.cache_write_5m else rates.write_5m
            usd -= sent.rewrite_tokens * (write - rates.cache_read)
        return tokens, round(usd, 9)


def _int_or_none(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _api_problem(view: Any) -> str:
    """The emulated API's own 400 checks on the rewritten body. A problem the
    client's original already had is the client's, and no reason to refuse."""
    from scalpel_desktop.emulator import validate as api

    check = {"messages": api.validate_messages_body, "chat": api.validate_chat_body,
             "responses": api.validate_responses_body}.get(view.endpoint)
    if check is None:
        return ""
    try:
        check(view.doc)
        return ""
    except api.ApiError as e:
        new = e.message
    try:
        check(view.original_doc)
    except api.ApiError as e:
        if e.message == new:
            return ""
    return f"the API would refuse it: {new}"


def build_surgery_stage(config: Any, db_conn: Any = None, spill_dir: Any = None,
                        prices: Any = None) -> SurgeryStage:
    """The stage as the proxy runs it: the ledger DB's surgery log, the spill dir."""
    from scalpel_desktop.store.spill import SpillStore
    from scalpel_desktop.surgery.cutlog import CutLog

    if db_conn is None:
        from scalpel_desktop.store.db import connect

        db_conn = connect()
    if prices is None:
        from scalpel_desktop.accounting.prices import PriceTable

        prices = PriceTable.load()
    return SurgeryStage(config, SpillStore(spill_dir), CutLog(db_conn), Economist(config, prices), prices)
