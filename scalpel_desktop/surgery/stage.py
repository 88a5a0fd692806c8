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
there) and prices the realized saving (SPEC 7, ``surgery/realized.py``).

Speed (docs/proxy.md): the previous request is kept (``memo.py``; a dropped one leaves a ``ghost.py``,
recorded turn by turn: ``ghost_turn``), extended when nothing is cuttable; one decision builder; a
first sighting that needs no change goes out at once, analysed after its response (``first_sighting``).
Writes (spill, cut log) wait ``write_wait_ms`` at most.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from scalpel_desktop.accounting.prices import PriceTable
from scalpel_desktop.accounting.tokens import CHARS_PER_TOKEN_DEFAULT
from scalpel_desktop.config import setting
from scalpel_desktop.exchange import Decision, Exchange, SurgerySent
from scalpel_desktop.store.db import connect
from scalpel_desktop.store.spill import SpillStore
from scalpel_desktop.store.cutlog import CutLog
from scalpel_desktop.surgery.doom import STUB_TOKENS, find_doom_spans
from scalpel_desktop.surgery.decision import record_decision
from scalpel_desktop.surgery.economist import Economist, tool_changes_beta
from scalpel_desktop.surgery import first_sighting, ghost_turn
from scalpel_desktop.surgery.exclude import excluded
from scalpel_desktop.surgery.unit_hashes import sent_unit_hashes
from scalpel_desktop.surgery.ghost import Ghosts
from scalpel_desktop.surgery.memo import Memo, Snapshot, messages_in
from scalpel_desktop.surgery.offsets import stub_positions
from scalpel_desktop.surgery.pin import pinnable, pinned
from scalpel_desktop.surgery.plan import Break, Candidate, RequestShape
from scalpel_desktop.surgery.policies import Policy, policy_named
from scalpel_desktop.surgery.realized import banked_credit, realized
from scalpel_desktop.surgery.remaining import own_budget, own_history
from scalpel_desktop.surgery.resume import own_resumes
from scalpel_desktop.surgery.surgeon import Surgeon
from scalpel_desktop.surgery.validate import pin_problems, rewrite_problem
from scalpel_desktop.wire.cache_rules import message_ttl_s
from scalpel_desktop.wire.formats import view_for
from scalpel_desktop.wire.hashing import region_hash
from scalpel_desktop.wire.held import MB
from scalpel_desktop.wire.identity import conversation_key
from scalpel_desktop.wire.jsoncodec import dumps, round_trips
from scalpel_desktop.wire.layout import CLOSE, Layout, locate, round_trips_by_layout
from scalpel_desktop.wire.view import ENDPOINTS, ConversationView, regions

log = logging.getLogger("scalpel.surgery")


class SurgeryStage:
    name = "surgery"
    mutates = True

    def __init__(self, config: Any, spill: Any, cutlog: Any, economist: Economist | None = None,
                 prices: Any = None):
        """``config``: the settings (a ``Settings``, a ``Config`` or a mapping), read live."""
        self.config = config
        self.spill = spill
        self.cutlog = cutlog
        if prices is None:
            prices = economist.prices if economist is not None and economist.prices is not None \
                else PriceTable.load()
        self.prices = prices
        self.economist = economist or Economist(config, prices)
        if self.economist.prices is None:
            self.economist.prices = prices
        self.surgeon = Surgeon(spill, cutlog)  # build_surgery_stage bounds its writes (the proxy's)
        # (view, config, tier=) -> doom spans; the bench shares one analysis per body across its arms
        self.find_spans = find_doom_spans
        self.ghosts = Ghosts(getattr(cutlog, "mark", lambda: 0), self.economist.entry_units,  # (surgery/ghost.py)
                             kept=self.economist.sent_hashes)
        self.memo = Memo(max_bytes=int(self._get("memo_mb")) * MB, evicted=self.ghosts.evicted)
        # A first sighting that needs no change goes out at once, analysed after its response.
        self.defer_first_sightings = True
        self.take_turns = True  # ... and a dropped one is recorded from its new messages (surgery/ghost_turn.py)
        # The proxy runs the pipeline on a thread pool: one request at a time in here
        # (the economist, the memo and the surgeon's pending cuts are shared state).
        self._lock = threading.RLock()

    def _get(self, name: str) -> Any:
        return setting(self.config, name)

    # ------------------------------------------------------------------ request
    def on_request(self, ex: Exchange) -> None:
        with self._lock:
            self._on_request(ex)

    def may_defer(self, request: Any, skeleton: Any) -> bool:  # (pipeline/lane.py)
        return first_sighting.may_defer(self, request, skeleton)

    def claim_turn(self, request: Any) -> Any:  # the lane's exchange takes what its ghost found
        with self._lock:
            return self.ghosts.claim(request)

    def takes_turn(self, turn: Any) -> bool:  # (surgery/ghost_turn.py)
        with self._lock:
            return ghost_turn.wants_turn(self, turn)

    def on_turn(self, ex: Exchange) -> None:
        with self._lock:
            try:
                ghost_turn.take_turn(self, ex, ex.turn)
            except Exception:  # noqa: BLE001 - recorded as the full path records it, from the parsed body
                log.exception("a dropped conversation's turn failed; analysed in full")
                ex.decision, ex.surgery = Decision(), None
                self.ghosts.drop((ex.key.session_id, ex.key.agent_id))
                first_sighting.analyse_after(self, ex)

    def _on_request(self, ex: Exchange) -> None:
        req = ex.request
        if req.endpoint not in ENDPOINTS or not req.body:
            return
        doc = ex.doc
        if not isinstance(doc, dict):
            return
        key = ex.key or conversation_key(req.headers, doc)
        ex.key = key
        model = ex.model or (doc.get("model") if isinstance(doc.get("model"), str) else "") or ""
        ckey = (key.session_id, key.agent_id) if hasattr(key, "session_id") else key
        pol = policy_named(self._get("policy"))
        # An earlier mutating stage (the tool filter) may have rewritten the body from
        # ex.doc already: its bytes are the base we work on, and what fail-open keeps.
        base = ex.new_body if ex.new_body is not None else req.body
        layout: Layout | None = None
        snap = None
        self.memo.max_bytes = int(self._get("memo_mb")) * MB
        if req.endpoint == "messages":
            snap = self.memo.get(ckey)
            if (snap is None or ex.forwarded) and first_sighting.send_as_it_came(self, ex, doc, ckey, pol, base):
                return
            given = ex.layout if base is req.body else None
            if given is not None and (snap is None or (ex.layout_base is snap.raw
                                                       and given.reused == len(snap.layout.ends) - 1)):
                layout = given  # parse-reuse laid these very bytes out (against this very previous body)
            else:
                layout = locate(base, doc, snap)
                if base is req.body and ex.layout is None and layout is not None:
                    ex.layout, ex.layout_base = layout, None  # ONE layout pass: parse-reuse takes it over
            if snap is not None and layout is not None and layout.reused \
                    and self._fast(ex, doc, ckey, model, pol, snap, layout, base):
                return
        # The last view analysed in full: its per-result work and validated rewritten messages are
        # shared with this one where the messages are the very same objects (parse-reuse hands them over).
        prev_view = snap.view if snap is not None else None
        self.memo.drop(ckey)
        self.memo.make_room(len(base), messages_in(doc))  # the old analyses go before this one is built
        view = view_for(req.endpoint, doc, previous=prev_view)
        if view is None:
            return
        dirs = self._get("exclude_dirs")
        if dirs and excluded(view.cwd(), dirs):  # (the cwd is looked for only when it matters)
            ex.decision.note("working directory excluded")
            return
        replayed = self._reapply(view, prev_view)
        shape = self._shape(ex, doc, ckey, model, self._hashes(view, layout, prev_view), layout, pol)
        brk = self.economist.natural_break(shape)  # once per request: decide and record_sent get it
        spans = []
        looked = pol.looks_for_dead(_results_from(view, brk.index), int(self._get("keep_recent")))
        if looked:
            spans = self.find_spans(view, self.config, tier=int(self._get("tier")))
        candidates = [Candidate(s.tool_use_id, s.unit_index, s.tokens, STUB_TOKENS, s.kind) for s in spans]
        plan = self.economist.decide(shape, candidates, policy=pol.name, brk=brk)
        cuts: list = []
        if plan.cut_ids:
            wanted = set(plan.cut_ids)
            try:
                cuts = self.surgeon.cut(view, [s for s in spans if s.tool_use_id in wanted],
                                        session=getattr(key, "session_id", ""), agent=getattr(key, "agent_id", ""))
            except Exception as e:  # noqa: BLE001 - no spill, no cut
                log.warning("cut failed, forwarding without new cuts: %s", e)
                self.surgeon.discard()
                return self._forward_original(ex, shape, brk, f"cut failed: {type(e).__name__}: {e}", view, layout)
        body = base
        pin = plan.pin_unit if cuts else None  # a warm cut's read boundary, made certain (surgery/pin.py)
        pinned_at = None  # the message whose last block the body sent carries the pin on
        if view.replaced:
            if not round_trips_by_layout(base, view.original_doc, layout, round_trips):
                self.surgeon.discard(cuts)
                return self._forward_original(ex, shape, brk,
                                              "body does not round-trip through the codec: forwarded as sent",
                                              view, layout)
            body = self._serialize(view)
            problem = self._rewrite_problem(view, validated=prev_view)
            if not problem and pin is not None:
                pinned_doc = pinned(view.doc, pin, plan.pin_ttl)
                problem = "the pin marker cannot be placed" if pinned_doc is None else \
                    "; ".join(pin_problems(view.doc, pinned_doc, pin))
                if not problem:
                    body, pinned_at = dumps(pinned_doc), pin
            if problem:
                self.surgeon.discard(cuts)
                return self._forward_original(ex, shape, brk, f"rewrite refused: {problem}", view, layout)
            if cuts and self.surgeon.commit(cuts) < len(cuts):
                # The cut log did not take the new cuts in time: they are not sent (only the
                # replayed stubs are), and the economist is told what did go out.
                log.warning("cut log not written within the bound: %d new cut(s) not sent", len(cuts))
                cuts, pin, pinned_at = [], None, None
                view, replayed, body = self._replays_only(req.endpoint, doc, prev_view, base)
                if view is None:
                    return self._forward_original(ex, shape, brk, "cut log not written in time: forwarded as sent",
                                                  view_for(req.endpoint, doc) or prev_view, layout)
            if body is not base:
                ex.new_body = body
        sent_hashes = self._hashes(view, layout, prev_view) if cuts else shape.unit_hashes
        serial = self.economist.record_sent(shape, sent_hashes, brk, pin_unit=pinned_at,
                                            risk_usd=plan.risk_usd if cuts else 0)
        sent = SurgerySent(serial, ckey, model, rewrite_tokens=plan.rewrite_tokens if cuts else 0, pin=pinned_at,
                           staked_usd=plan.risk_usd if cuts else 0.0)
        positions = self._stub_positions(body, view, replayed, cuts)
        sent.stubs = [(tid, off / max(1, len(body)), saved, kind) for tid, off, saved, kind, _ in positions]
        sent.bytes_removed = len(base) - len(body)
        ex.surgery = sent
        if layout is not None and pinned_at is None:  # a pinned body is not the next request's prefix: no reuse
            self._remember(ckey, base, layout, view, body if view.replaced else None, list(sent_hashes), positions)
        # dead tool output found and not cut now: still carried (the dashboard's context breakdown)
        dead = {"dead_left": max(0, sum(s.tokens for s in spans) - sum(c.tokens for c in cuts))} if looked else None
        self._decide(ex, plan, replayed=len(replayed), cuts=cuts, removed=sum(t for _, _, t, _ in sent.stubs),
                     extra=dead)

    def _fast(self, ex: Exchange, doc: dict, ckey: Any, model: str, pol: Policy, snap: Snapshot,
              layout: Layout, raw: bytes) -> bool:
        """The common case: same history plus new messages, nothing cuttable at or after the
        break. Sends the previous body's prefix (with its stubs) plus the new bytes."""
        if pol.warm or self._get("exclude_dirs"):
            return False
        k = layout.reused
        msgs = doc["messages"]
        if any(unit >= k for _, _, _, unit in snap.stubs):
            return False
        tail_ids = [b.get("tool_use_id") for m in msgs[k:] if isinstance(m, dict) and isinstance(m.get("content"), list)
                    for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_result"]
        if tail_ids and self.cutlog.lookup([t for t in tail_ids if isinstance(t, str)]):
            return False
        hashes = tuple(snap.sent_hashes[:k]) + tuple(layout.hashes[k:])
        shape = self._shape(ex, doc, ckey, model, hashes, layout, pol)
        brk = self.economist.natural_break(shape)
        if pol.looks_for_dead(first_sighting.results_in(msgs[brk.index:]), int(self._get("keep_recent"))):
            return False
        body = None
        if snap.sent is not None:
            cut = layout.ends[k - 1]
            body = snap.sent[: cut + snap.shift[k - 1]] + raw[cut:]
            ex.new_body = body
        size = max(1, len(body if body is not None else raw))
        plan = self.economist.decide(shape, (), policy=pol.name, brk=brk)  # nothing to cut: the plan says why
        serial = self.economist.record_sent(shape, hashes, brk)
        sent = SurgerySent(serial, ckey, model,
                           [(tid, off / size, saved, "replayed") for tid, off, saved, _ in snap.stubs],
                           bytes_removed=len(raw) - len(body) if body is not None else 0)
        ex.surgery = sent
        self.memo.put(ckey, Snapshot(raw, layout, body, snap.shift[:k] + [snap.shift[k - 1]] * (len(msgs) - k),
                                     list(hashes), list(snap.stubs), view=snap.view, view_prefix=min(k, snap.view_prefix)))
        self._decide(ex, plan, replayed=len(snap.stubs), cuts=[], removed=sum(s[2] for s in snap.stubs),
                     extra={"reused_units": k})
        return True

    def _remember(self, ckey: Any, raw: bytes, layout: Layout, view: Any, sent: bytes | None,
                  sent_hashes: list, positions: list) -> None:
        sizes = layout.sizes
        shift = [0] * len(sizes)  # unchanged before the first message a stub went into
        touched = {unit for *_, unit in positions}
        if touched:
            acc = 0
            msgs = view.doc["messages"]
            for i in range(min(touched), len(sizes)):
                if i in touched:
                    acc += len(dumps(msgs[i])) - sizes[i]
                shift[i] = acc
        out = sent if sent is not None else raw
        if not shift or layout.ends[-1] + shift[-1] >= len(out) or out[layout.ends[-1] + shift[-1]] != CLOSE:
            return  # the sent body is not laid out as expected: no reuse next time
        stubs = [(tid, off, saved, unit) for tid, off, saved, _, unit in positions if off >= 0]
        self.memo.put(ckey, Snapshot(raw, layout, sent, shift, sent_hashes, stubs, view=view,
                                     view_prefix=messages_in(view.original_doc)))

    def _forward_original(self, ex: Exchange, shape: RequestShape, brk: Break, reason: str, view: Any,
                          layout: Layout | None) -> None:
        """Fail open: the bytes we were given go out, and the economist remembers THEM as sent."""
        # (view.original_doc is what an earlier stage left in ex.doc: keep its body.)
        hashes = shape.unit_hashes
        if view.replaced:
            original = view_for(view.endpoint, view.original_doc)
            hashes = tuple(self._hashes(original, layout)) if original is not None else ()
        serial = self.economist.record_sent(shape, hashes, brk)
        ex.surgery = SurgerySent(serial, shape.key, shape.model)
        ex.decision.note(reason[:300])  # an earlier stage's change (the filter's) still went out

    def _replays_only(self, endpoint: str, doc: dict, prev_view: Any, base: bytes) -> tuple[Any, dict, bytes]:
        """(view, replayed, body) with the logged cuts re-applied and nothing new; view None
        when that body does not validate (the original goes out)."""
        view = view_for(endpoint, doc, previous=prev_view)
        if view is None:
            return None, {}, base
        replayed = self._reapply(view, prev_view)
        if not view.replaced:
            return view, replayed, base
        if self._rewrite_problem(view, validated=prev_view):
            return None, {}, base
        return view, replayed, view.serialize()

    def _reapply(self, view: Any, previous: Any = None) -> dict[str, int]:
        """Re-apply logged cuts; return {tool_use_id: tokens saved} of the replayed ones."""
        if not self.surgeon.reapply(view, previous=previous):
            return {}
        records = self.cutlog.lookup(list(view.replaced))
        return {tid: max(0, rec.tokens - STUB_TOKENS) for tid, rec in records.items() if tid in view.replaced}

    # ------------------------------------------------------------------ response
    def on_response(self, ex: Exchange) -> None:
        if ex.analyse_later:  # (it takes the lock around the shared state only: first_sighting.py)
            ex.analyse_later = False
            first_sighting.analyse_after(self, ex)
        with self._lock:
            self._on_response(ex)

    def _on_response(self, ex: Exchange) -> None:
        sent, res = ex.surgery, ex.response
        if sent is None or res is None:
            return
        usage, ok = res.usage, res.usage is not None and res.status < 400  # (banked: the stubs' sure saving)
        cached = (usage.cache_read, usage.cache_write) if usage is not None else (None, None)
        sent.banked_usd = banked_credit(self.prices, sent, usage) if ok else 0.0  # (the ledger's risk budget)
        cost = self.prices.rates(sent.model).cost(usage) if ok else 0.0  # (the base of the conversation's cap)
        sent.resume = self.economist.record_finished(sent.key, sent.model, sent.serial, res.finished_at, *cached,
                                                     ok=ok, saved_usd=sent.banked_usd, cost_usd=cost)
        self.economist.forget_cold(ex.request.received_at)  # (what no later request can use; off the request path)
        if not ok or not sent.stubs:
            return
        ex.realized.append(realized(self.prices, sent, usage, ex.token_ratio, len(ex.body_to_send())))

    _decide = staticmethod(record_decision)  # the decision for the ledger: ONE builder for every path
    _hashes = staticmethod(sent_unit_hashes)  # ---------------------------------------- helpers
    # (the bench shares one rewritten body, its verdict and its stubs' offsets across the arms that send it)
    _serialize, _rewrite_problem = staticmethod(ConversationView.serialize), staticmethod(rewrite_problem)
    _stub_positions = staticmethod(stub_positions)

    def _shape(self, ex: Exchange, doc: dict, ckey: Any, model: str, hashes: tuple, layout: Layout | None,
               pol: Policy) -> RequestShape:
        unit_tokens = unit_pinnable = None
        free_markers = 0
        endpoint = ex.request.endpoint
        if pol.warm:  # a warm cut is weighed message by message, its read boundary pinned
            msgs = doc.get("messages") or doc.get("input") or []
            sizes = layout.sizes if layout is not None else [len(dumps(m)) for m in msgs]
            unit_tokens = [int(n / CHARS_PER_TOKEN_DEFAULT) for n in sizes]
            if endpoint == "messages":
                unit_pinnable, free_markers = pinnable(doc, ex.new_body if ex.new_body is not None
                                                       else ex.request.body)
        system, tools, settings = regions(endpoint, doc)
        return RequestShape(
            key=ckey,
            model=model,
            at=ex.request.received_at,
            unit_hashes=hashes,
            tools_hash=region_hash(tools),
            system_hash=region_hash(system),
            settings_hash=region_hash(settings),
            ttl_s=message_ttl_s(endpoint, doc),
            tool_changes_ok=tool_changes_beta(ex.request.headers),
            unit_tokens=unit_tokens,
            unit_pinnable=unit_pinnable,
            free_markers=free_markers,
            total_tokens=ex.tokens_before or int(len(ex.request.body) / CHARS_PER_TOKEN_DEFAULT),
            rewrite_at=ex.client_rewrite_at,
        )


def _results_from(view: Any, unit: int) -> int:
    return sum(1 for r in view.tool_results if r.unit_index >= unit)


def build_surgery_stage(config: Any, db_conn: Any = None, spill_dir: Any = None,
                        prices: Any = None) -> SurgeryStage:
    """The stage as the proxy runs it: the ledger DB's surgery log, the spill dir."""
    db_conn = connect() if db_conn is None else db_conn
    prices = PriceTable.load() if prices is None else prices
    economist = Economist(config, prices, own_history(db_conn), own_budget(db_conn), own_resumes(db_conn))
    stage = SurgeryStage(config, SpillStore(spill_dir), CutLog(db_conn), economist, prices)
    # A request waits for a spill or the cut log ``write_wait_ms`` at most (store/offpath.py).
    stage.surgeon.wait_s = lambda: int(setting(config, "write_wait_ms")) / 1000.0
    return stage

