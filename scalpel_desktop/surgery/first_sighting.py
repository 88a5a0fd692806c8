"""A first sighting goes out as it came, and is analysed after its response.

A conversation the economist has never seen is warm until known (its break
is the last message): nothing is cut on a guess, warm policies included
(the economist makes no warm cut for a conversation it holds no state for;
its next request, its cache state known from this one's usage, may). What
such a request can need is the re-application of logged cuts - found by
tool_use_id in the raw bytes (``offsets.result_ids``: every tool result of a
body the codec reproduces shows its id there verbatim) - or a free cut
inside its last message (more results there than ``keep_recent`` protects).
Without either, the body goes out unchanged at once: no layout, no view, no
analysis on the request path. ``may_defer`` says the same from the body's
skeleton, so that a large first sighting goes out before any stage has
parsed it (``pipeline/lane.py``), whatever the policy and the user's history.
After the response ``analyse_after`` records exactly what the stage's full
path would have (the economist's state, the memo's snapshot, the decision).
A conversation the economist knows (only its memo entry was dropped), or a
body an earlier stage changed, takes the full path on the request.
"""

from __future__ import annotations

import logging
from typing import Any

from scalpel_desktop.exchange import Exchange, SurgerySent
from scalpel_desktop.surgery.doom import STUB_TOKENS
from scalpel_desktop.surgery.exclude import excluded
from scalpel_desktop.surgery.ghost import ghost_body
from scalpel_desktop.surgery.memo import messages_in
from scalpel_desktop.surgery.offsets import result_ids
from scalpel_desktop.surgery.plan import Candidate, Plan
from scalpel_desktop.surgery.policies import Policy, policy_named
from scalpel_desktop.wire.formats import view_for
from scalpel_desktop.wire.identity import conversation_key
from scalpel_desktop.wire.jsoncodec import too_deep
from scalpel_desktop.wire.layout import locate

log = logging.getLogger("scalpel.surgery")


def results_in(msgs: list) -> int:
    """Tool results in ``msgs`` (Anthropic blocks, Chat ``tool`` messages, Responses outputs)."""
    n = 0
    for m in msgs:
        if not isinstance(m, dict):
            continue
        if m.get("role") == "tool" or m.get("type") == "function_call_output":
            n += 1
        elif isinstance(m.get("content"), list):
            n += sum(1 for b in m["content"] if isinstance(b, dict) and b.get("type") == "tool_result")
    return n


def send_as_it_came(stage: Any, ex: Exchange, doc: dict, ckey: Any, pol: Policy, base: bytes) -> bool:
    """True (and ``ex.analyse_later`` set) when this first sighting goes out unchanged now, or
    went out so already (``ex.forwarded``: ``pipeline/lane.py``); or when a known conversation whose
    memo entry was dropped goes out as its ghost says (``ex.new_body``: its cuts re-applied)."""
    if ex.forwarded:
        ex.analyse_later = True
        return True
    if not stage.defer_first_sightings or base is not ex.request.body:
        return False
    msgs = doc.get("messages")
    if not isinstance(msgs, list) or not msgs:
        return False
    if ckey in stage.economist.conversations and ex.request.endpoint == "messages":
        # Known, its memo entry dropped (parse-reuse kept its body): what its ghost vouches for
        # (unless the lane asked already, for this very request, and was refused).
        asked, stage.ghosts.refused = stage.ghosts.refused == id(ex.request), None
        body = None if asked else ghost_body(stage, ex.request, _Counted(msgs, doc.get("model")), ckey, pol.name)
        if body is None:
            return False
        if body is not base:
            ex.new_body = body
    elif not _nothing_to_replay(stage, base, ckey, pol, msgs[-1], ex.request.received_at):
        return False
    ex.analyse_later = True  # the decision is made after the response, as the full path would make it
    return True


class _Counted:
    """What ``ghost_body`` reads of a skeleton (its length, its model), from a parsed document."""

    def __init__(self, msgs: list, model: Any):
        self._n, self.model = len(msgs), model if isinstance(model, str) else ""

    def __len__(self) -> int:
        return self._n


def may_defer(stage: Any, request: Any, skeleton: Any) -> bool | bytes:
    """``send_as_it_came`` from the body's skeleton alone (``pipeline/lane.py``): True only when the
    stage would surely send this first sighting as it came, so it can go before the stage looks.
    A known conversation the memo dropped: the bytes its full path would surely send (its logged
    cuts re-applied, nothing new cut: ``surgery/ghost.py``), or False."""
    if request.endpoint != "messages":
        return True  # only Messages bodies take the lane (and this stage is not asked of others)
    if not stage.defer_first_sightings:
        return False
    skeleton = skeleton()
    ckey = (skeleton.key.session_id, skeleton.key.agent_id)
    with stage._lock:
        if stage.memo.get(ckey) is not None:
            return False
        pol = policy_named(stage._get("policy"))
        if ckey in stage.economist.conversations:
            got = ghost_body(stage, request, skeleton, ckey, pol.name, True)
            stage.ghosts.refused = id(request) if got is None else None
            return got or False
        return _nothing_to_replay(stage, request.body, ckey, pol, skeleton.message(-1), request.received_at)


def _nothing_to_replay(stage: Any, raw: bytes, ckey: Any, pol: Policy, last: Any, at: float) -> bool:
    """No cut the stage must make now: the economist does not know the conversation (one it knows,
    whose memo entry was dropped, may be cut), the ledger holds no resume point that may put it at
    a break (``surgery/resume.py``: a resume after a restart), its last message holds no free cut,
    and it holds no logged cut to re-apply."""
    if ckey in stage.economist.conversations or (pol.cuts and stage.economist.resumes.may_apply(ckey, at)):
        return False
    if pol.cuts and results_in([last]) > int(stage._get("keep_recent")):
        return False  # the last message (at the break) may hold a free cut
    if stage.cutlog.any_logged():
        ids = result_ids(raw)
        if ids is None or (ids and stage.cutlog.any_known(ids)):
            return False  # a logged cut to re-apply (or an escaped id: only the parsed document knows)
    return True


def analyse_after(stage: Any, ex: Exchange) -> None:
    """The full path's record of a first sighting sent as it came, after its response.

    Only what touches the stage's shared state (the memo, the economist, the cut log) holds the
    stage's lock; the view and the doom scan of this request's own document (most of the time: a
    3 MB first sighting's 190 ms, 180 of them there) run outside it, so another conversation's
    request never waits for them (issue 25). The conversation's own next request waits for this
    completion in the chain's order (``pipeline/chain.py``), or goes as it came by the lane."""
    try:
        _analyse_after(stage, ex)
    except Exception as e:  # noqa: BLE001 - only a body nested deeper than the codec writes
        if not too_deep(e):
            raise
        ex.decision.note("body nests deeper than the JSON codec writes: forwarded as sent")


def _pause(ex: Exchange) -> None:
    """Between the analysis's long phases: requests on their way go first (``Chain.complete``)."""
    if ex.yield_to_requests is not None:
        ex.yield_to_requests()


def _analyse_after(stage: Any, ex: Exchange) -> None:
    req = ex.request
    doc = ex.doc
    if not isinstance(doc, dict):
        return
    key = ex.key or conversation_key(req.headers, doc)
    ckey = (key.session_id, key.agent_id) if hasattr(key, "session_id") else key
    model = ex.model or (doc.get("model") if isinstance(doc.get("model"), str) else "") or ""
    pol = policy_named(stage._get("policy"))
    layout = ex.layout if ex.layout is not None else locate(req.body, doc, None)
    with stage._lock:
        stage.memo.make_room(len(req.body), messages_in(doc))  # old analyses go before this one
    _pause(ex)
    view = view_for(req.endpoint, doc)  # (this request's own document: no lock)
    if view is None:
        return
    dirs = stage._get("exclude_dirs")
    if dirs and excluded(view.cwd(), dirs):
        ex.decision.note("working directory excluded")
        return
    with stage._lock:
        # What went out: as it came, or a known conversation's body with its logged cuts (``ghost_body``).
        replayed = stage._reapply(view) if ex.new_body is not None else {}
    body = view.serialize() if view.replaced else req.body
    if body != ex.body_to_send():
        log.error("a dropped conversation's request went out other than its full path would send it; "
                  "the conversation is analysed anew on its next request")
        with stage._lock:
            stage.economist.conversations.pop(ckey, None)
        ex.decision.note("sent other than the full path would have: analysed anew next time")
        return
    shape = stage._shape(ex, doc, ckey, model, stage._hashes(view, layout), layout, pol)
    with stage._lock:
        brk = stage.economist.natural_break(shape)
    # What the full path would have looked at, decided and recorded (its figures included).
    spans = []
    looked = pol.looks_for_dead(sum(1 for r in view.tool_results if r.unit_index >= brk.index),
                                int(stage._get("keep_recent")))
    if looked:
        _pause(ex)
        spans = stage.find_spans(view, stage.config, tier=int(stage._get("tier")))  # (no lock)
    candidates = [Candidate(s.tool_use_id, s.unit_index, s.tokens, STUB_TOKENS, s.kind) for s in spans]
    positions = stage._stub_positions(body, view, replayed, []) if replayed else []
    with stage._lock:
        plan = stage.economist.decide(shape, candidates, policy=pol.name, brk=brk)
        if plan.cut_ids:  # send_as_it_came ruled this out: say so rather than record a cut never sent
            log.warning("a first sighting went out as it came where the full path would have cut (%s)", plan.reason)
            plan = Plan(natural_break=brk, reason=f"sent before its analysis; {plan.reason}", figures=plan.figures)
        serial = stage.economist.record_sent(shape, shape.unit_hashes, brk)
        ex.surgery = sent = SurgerySent(serial, ckey, model)
        sent.stubs = [(tid, off / max(1, len(body)), saved, kind) for tid, off, saved, kind, _ in positions]
        sent.bytes_removed = len(req.body) - len(body)
        if layout is not None:
            stage._remember(ckey, req.body, layout, view, body if view.replaced else None, list(shape.unit_hashes),
                            positions)
        dead = {"dead_left": sum(s.tokens for s in spans)} if looked else None
        stage._decide(ex, plan, replayed=len(replayed), cuts=[], removed=sum(t for _, _, t, _ in sent.stubs),
                      extra=dead)
