"""A first sighting goes out as it came, and is analysed after its response.

A conversation the economist has never seen is warm until known (its break
is the last message): nothing is cut on a guess. What such a request can
need is the re-application of logged cuts - found by tool_use_id in the raw
bytes (``offsets.result_ids``: every tool result of a body the codec
reproduces shows its id there verbatim) - or a cut inside its last message
(more results there than ``keep_recent`` protects), or under a warm policy
(``death``, ``payback``) a warm cut that could repay even at its worst case
(``warm_cut_possible``: only when a first sighting has remaining turns to
earn on at all, and then only when the economist's plan, made without the
layout (``would_cut``), cuts). Without any of these, the body goes out
unchanged at once: no layout, no view, no analysis on the request path.
``may_defer`` says the same from the body's skeleton, so that a large first
sighting goes out before any stage has parsed it (``pipeline/lane.py``).
After the response ``analyse_after`` records exactly what the stage's full
path would have (the economist's state, the memo's snapshot, the decision).
A conversation the economist knows (only its memo entry was dropped), or a
body an earlier stage changed, takes the full path on the request.
"""

from __future__ import annotations

import logging
from typing import Any

from scalpel_desktop.accounting.tokens import CHARS_PER_TOKEN_DEFAULT, estimate_tokens_bytes
from scalpel_desktop.exchange import Exchange, SurgerySent
from scalpel_desktop.surgery.doom import STUB_TOKENS
from scalpel_desktop.surgery.exclude import excluded
from scalpel_desktop.surgery.memo import messages_in
from scalpel_desktop.surgery.offsets import result_ids
from scalpel_desktop.surgery.plan import Candidate, Plan
from scalpel_desktop.surgery.policies import Policy, policy_named
from scalpel_desktop.surgery.remaining import horizon
from scalpel_desktop.surgery.warm_bound import no_warm_cut_pays
from scalpel_desktop.wire.cache_rules import MARKED_TAIL, message_ttl_s
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
    went out so already (``ex.forwarded``: ``pipeline/lane.py``)."""
    if ex.forwarded:
        ex.analyse_later = True
        return True
    if not stage.defer_first_sightings or base is not ex.request.body:
        return False
    msgs = doc.get("messages")
    if not isinstance(msgs, list) or not msgs:
        return False
    if not _nothing_to_replay(stage, base, ckey, pol, msgs[-1]):
        return False
    model = ex.model or (doc.get("model") if isinstance(doc.get("model"), str) else "") or ""
    tokens = ex.tokens_before or int(len(ex.request.body) / CHARS_PER_TOKEN_DEFAULT)
    if pol.warm and warm_cut_possible(stage, model, message_ttl_s(ex.request.endpoint, doc), tokens) \
            and would_cut(stage, ex, doc, ckey, pol):
        return False
    ex.analyse_later = True  # the decision is made after the response, as the full path would make it
    return True


def may_defer(stage: Any, request: Any, skeleton: Any) -> bool:
    """``send_as_it_came`` from the body's skeleton alone (``pipeline/lane.py``): True only when the
    stage would surely send this first sighting as it came, so it can go before the stage looks.
    Where ``would_cut`` needs the analysis, a bound from the message sizes stands in for it
    (``warm_bound.no_warm_cut_pays``); when the bound cannot rule a cut out, the usual path decides."""
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
        if not _nothing_to_replay(stage, request.body, ckey, pol, skeleton.message(-1)):
            return False
        if not pol.warm:
            return True
        ttl = message_ttl_s("messages", skeleton.with_last(MARKED_TAIL))
        tokens = estimate_tokens_bytes(len(request.body))  # what Identify will say
        if not warm_cut_possible(stage, skeleton.model, ttl, tokens):
            return True
        return no_warm_cut_pays(stage.economist._rates(skeleton.model), ttl, skeleton, tokens)


def _nothing_to_replay(stage: Any, raw: bytes, ckey: Any, pol: Policy, last: Any) -> bool:
    """No cut the stage must make now, but a warm one: the economist does not know the conversation
    (only its memo entry was dropped: it may cut), its last message holds no free cut, and it holds
    no logged cut to re-apply."""
    if ckey in stage.economist.conversations:
        return False
    if pol.cuts and results_in([last]) > int(stage._get("keep_recent")):
        return False  # the last message (at the break) may hold a free cut
    if stage.cutlog.any_logged():
        ids = result_ids(raw)
        if ids is None or (ids and stage.cutlog.any_known(ids)):
            return False  # a logged cut to re-apply (or an escaped id: only the parsed document knows)
    return True


def warm_cut_possible(stage: Any, model: str, ttl_s: float, tokens_now: int) -> bool:
    """Could a warm policy cut this unknown conversation before its break?

    Its break is its last message and no entry of it is known, so a warm cut
    would be priced at its worst case over the remaining turns a conversation
    seen for the first time gets (``remaining.horizon`` with nothing so far, as
    ``payback.payback_plan`` asks it): with none (a fresh install's prior, or a
    ledger whose conversations say so) no warm cut can repay. Otherwise
    ``would_cut`` asks the economist's plan (its risk budget is empty for a
    conversation never seen, so only a cut cheaper than the reads it saves at
    once, nothing read at all, can be made).
    """
    hz = horizon(stage.economist.history, model=model, so_far=0, conv_breaks=0, ttl_s=ttl_s,
                 margin=float(stage._get("ttl_margin_s")), tokens_now=tokens_now, first_tokens=0,
                 factor=float(stage._get("payback_factor")), cap=int(stage._get("payback_turns_max")))
    return hz.turns >= 1


def would_cut(stage: Any, ex: Exchange, doc: dict, ckey: Any, pol: Policy) -> bool:
    """The economist's plan for this unknown conversation, without its layout: does it cut?

    For a conversation with no state the plan depends on the dead results found,
    each message's size and the prompt's, never on the messages' hashes (there is
    no earlier entry to match them with): the view, the doom spans and the sizes
    are enough. Only a plan that cuts takes the full path on the request; any
    other goes out as it came, and ``analyse_after`` records it in full (layout
    and hashes included) after the response.
    """
    view = view_for(ex.request.endpoint, doc)
    if view is None:
        return True  # nothing to decide here: the full path says why
    dirs = stage._get("exclude_dirs")
    if dirs and excluded(view.cwd(), dirs):
        return True
    model = ex.model or (doc.get("model") if isinstance(doc.get("model"), str) else "") or ""
    units = len(view.units)
    shape = stage._shape(ex, doc, ckey, model, tuple(range(units)), None, pol)  # placeholders: no state to match
    brk = stage.economist.natural_break(shape)
    if not pol.looks_for_dead(sum(1 for r in view.tool_results if r.unit_index >= brk.index),
                              int(stage._get("keep_recent"))):
        return False
    spans = stage.find_spans(view, stage.config, tier=int(stage._get("tier")))
    if not spans:
        return False
    candidates = [Candidate(s.tool_use_id, s.unit_index, s.tokens, STUB_TOKENS, s.kind) for s in spans]
    return bool(stage.economist.decide(shape, candidates, policy=pol.name, brk=brk).cut_ids)


def analyse_after(stage: Any, ex: Exchange) -> None:
    """The full path's record of a first sighting sent as it came, after its response."""
    try:
        _analyse_after(stage, ex)
    except Exception as e:  # noqa: BLE001 - only a body nested deeper than the codec writes
        if not too_deep(e):
            raise
        ex.decision.note("body nests deeper than the JSON codec writes: forwarded as sent")


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
    stage.memo.make_room(len(req.body), messages_in(doc))  # old analyses go before this one
    view = view_for(req.endpoint, doc)
    if view is None:
        return
    dirs = stage._get("exclude_dirs")
    if dirs and excluded(view.cwd(), dirs):
        ex.decision.note("working directory excluded")
        return
    shape = stage._shape(ex, doc, ckey, model, stage._hashes(view, layout), layout, pol)
    brk = stage.economist.natural_break(shape)
    # What the full path would have looked at, decided and recorded (its figures included).
    spans = []
    looked = pol.looks_for_dead(sum(1 for r in view.tool_results if r.unit_index >= brk.index),
                                int(stage._get("keep_recent")))
    if looked:
        spans = stage.find_spans(view, stage.config, tier=int(stage._get("tier")))
    candidates = [Candidate(s.tool_use_id, s.unit_index, s.tokens, STUB_TOKENS, s.kind) for s in spans]
    plan = stage.economist.decide(shape, candidates, policy=pol.name, brk=brk)
    if plan.cut_ids:  # send_as_it_came ruled this out: say so rather than record a cut never sent
        log.warning("a first sighting went out as it came where the full path would have cut (%s)", plan.reason)
        plan = Plan(natural_break=brk, reason=f"sent as it came (a first sighting); {plan.reason}",
                    figures=plan.figures)
    serial = stage.economist.record_sent(shape, shape.unit_hashes, brk)
    ex.surgery = SurgerySent(serial, ckey, model)
    if layout is not None:
        stage._remember(ckey, req.body, layout, view, None, list(shape.unit_hashes), [])
    dead = {"dead_left": sum(s.tokens for s in spans)} if looked else None
    stage._decide(ex, plan, replayed=0, cuts=[], removed=0, extra=dead)
