"""The morning resume: a conversation's first request after a proxy restart, cut at its TTL break.

Why: the economist's cache knowledge lives in memory, so after a restart a
conversation's next request was ``first-seen`` (warm until known, nothing
cut) even when the ledger showed its last answer ended long past the TTL:
the main cold-cache case of the day saved nothing, and the miss it paid
re-wrote its dead output at the write price (issue 26).

The ledger keeps, per conversation and model, the digest of the prefix last
sent (after the cuts), when its answer ended and the TTL it asked for
(``store/resume_points.py``). A first sighting of that conversation and model
is at a ``ttl-expired`` break (index 0) when

* its prefix up to the recorded point is the recorded one (the same
  messages, system, tools and settings, every logged cut re-applied);
* that answer ended more than the TTL plus the margin before it
  (``surgery/ttl_margin.py``), and no other model of the conversation may
  still hold a live cache (a later row without a digest, a request in
  flight: warm until known).

The break is **certain** when nothing else could have refreshed that cache
since: the proxy was the only way out (autopilot pointed Claude Code at it
since before that request: ``route_since``), and the ledger is whole (the
previous proxy stopped cleanly, having written every row: ``clean_stop_at``).
Otherwise it is a **guess**, priced as a bet: the worst case, that the cache
was in fact live, re-writes everything from the first cut on instead of
reading it, and that is staked from the user's risk budget under the
conversation's cap (``surgery/budget.py``), the conversation's standing read
back from the ledger. A guess the budget cannot cover is no cut.

Pure: the caller hands in what the ledger says and the two facts above.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass, field
from typing import Any, Callable, Hashable, Sequence

from scalpel_desktop import clock
from scalpel_desktop.store.resume_points import ResumePoint, Standing, resume_points, standings, take_clean_stop
from scalpel_desktop.surgery.budget import refusal
from scalpel_desktop.surgery.digests import Digests
from scalpel_desktop.surgery.plan import LONGEST_TTL_S, Break, ConversationState, Plan, RequestShape

GUESS = "ttl-expired after a restart, a guess"
log = logging.getLogger("scalpel.surgery")


def resume_digest(system_hash: Any, tools_hash: Any, settings_hash: Any, hashes: Sequence[Hashable],
                  units: int) -> str | None:
    """A digest of the prefix up to ``units`` messages that another process can compute again
    (None when a hash is not the bytes the proxy uses: tests' own hashables)."""
    h = hashlib.sha256()
    for region in (system_hash, tools_hash, settings_hash):
        h.update(str(region).encode("utf-8", "surrogatepass") + b"\0")
    part = hashes[:units]
    if isinstance(part, Digests):
        h.update(part.blob)
    else:
        for x in part:
            if not isinstance(x, bytes):
                return None
            h.update(x)
    return h.hexdigest()[:32]


def point_fields(state: Any) -> tuple[int, str, float] | None:
    """(units, digest, ttl) the ledger keeps of a request the economist recorded (``ModelState``):
    every message but the last, which the client may rewrite."""
    units = max(0, len(state.unit_hashes) - 1)
    digest = resume_digest(state.system_hash, state.tools_hash, state.settings_hash, state.unit_hashes, units)
    return None if digest is None else (units, digest, float(state.ttl_s))


@dataclass
class Resumes:
    """The ledger's resume points, read at start; each used once, by the first sighting it is for."""

    points: dict[Hashable, dict[str, ResumePoint]] = field(default_factory=dict)
    standings: dict[Hashable, Standing] = field(default_factory=dict)
    clean_stop_at: float | None = None  # when the previous proxy stopped with every row written
    route_since: Callable[[], float | None] = lambda: None  # since when autopilot routes Claude Code here

    def may_apply(self, key: Hashable, at: float) -> bool:
        """Cheap: could a first sighting of ``key`` at ``at`` be at a resumed break (the full path
        must look)? True when the ledger holds a point of it past its TTL at ``at``."""
        got = self.points.get(key)
        return bool(got) and any(p.digest is not None and p.answered_at is not None and p.ttl_s
                                 and p.answered_at + p.ttl_s < at for p in got.values())

    def resumed_break(self, shape: RequestShape, margin: float, conv: ConversationState | None) -> Break | None:
        """The break of a first sighting of ``shape.model`` in ``shape.key``, from the ledger (None:
        none to read, or not provably expired: warm until known)."""
        got = self.points.get(shape.key)
        p = got.get(shape.model) if got else None
        if p is None or p.digest is None or p.answered_at is None or not p.ttl_s:
            return None
        if shape.at <= p.answered_at + p.ttl_s + margin:
            return None  # may still be live
        for model, other in got.items():
            if model == shape.model or (conv is not None and model in conv.models):
                continue  # (a model seen since the start is the economist's to judge)
            end = other.answered_at if other.answered_at is not None else other.sent_at
            if shape.at <= max(end, other.sent_at) + (other.ttl_s or 3600.0) + margin:
                return None  # another model's cache may be live, and it may share the prefix
        units = p.units or 0
        if len(shape.unit_hashes) <= units:
            return None
        if resume_digest(shape.system_hash, shape.tools_hash, shape.settings_hash, shape.unit_hashes,
                         units) != p.digest:
            return None  # not the history that was sent: its break is not ours to know
        since = self.route_since()
        certain = (since is not None and since <= p.sent_at
                   and self.clean_stop_at is not None and self.clean_stop_at >= p.answered_at)
        return Break(0, "ttl-expired", 0, guess=not certain)

    def state_for(self, key: Hashable, rates_of: Callable[[str], Any]) -> ConversationState:
        """A conversation's state as the ledger knows it: its turns, what its cuts banked, what its
        bets staked and what it has cost so far (the base of its cap, ``surgery/budget.py``)."""
        conv = ConversationState()
        st = self.standings.get(key)
        if st is not None:
            conv.turns, conv.banked_usd, conv.staked_usd = st.turns, st.banked_usd, st.staked_usd
            conv.cost_usd = sum(_cost(rates_of(m), u) for m, u in (st.usage or {}).items())
        return conv

    def seed(self, shape: RequestShape, conv: ConversationState | None, rates_of: Callable[[str], Any]) -> \
            ConversationState:
        """The state a conversation's first request of ``shape.model`` since the start is recorded in:
        a new conversation takes its standing from the ledger; its resume point is used up."""
        got = self.points.get(shape.key)
        if got is not None:
            got.pop(shape.model, None)
            if not got:
                del self.points[shape.key]
        if conv is None:
            conv = self.state_for(shape.key, rates_of) if shape.key in self.standings else ConversationState()
            self.standings.pop(shape.key, None)
        return conv


def own_resumes(conn: Any) -> Resumes:
    """The ledger's resume points and standings, and the previous proxy's clean-stop mark, read
    once at start (never on the request path); none when the ledger cannot be read."""
    clean = take_clean_stop()
    try:
        points = resume_points(conn, clock.now())
        return Resumes(points, standings(conn, set(points)), clean)
    except Exception as e:  # noqa: BLE001 - no resume points: first sightings are warm until known
        log.warning("could not read the ledger's resume points: %s", e)
        return Resumes(clean_stop_at=clean)


def _cost(rates: Any, usage: tuple[int, int, int, int, int]) -> float:
    inp, w5, w1, read, out = usage
    return (rates.input * inp + rates.write_5m * w5 + rates.write_1h * w1 + rates.cache_read * read
            + rates.output * out)


def priced_guess(plan: Plan, shape: RequestShape, cut: Sequence[Any], conv: ConversationState, rates: Any,
                 budget: Any, cap_pct: float) -> Plan:
    """A cut at a guessed break (``cut``: its candidates), as a bet: its worst case (the cache was
    live after all: everything from the first cut on re-written at the write price instead of
    read) staked from the user's risk budget under the conversation's cap, or no cut."""
    if not plan.cut_ids or not cut:
        return plan
    first = min(c.unit_index for c in cut)
    if shape.unit_tokens is not None and first < len(shape.unit_tokens):
        region = sum(int(t) for t in shape.unit_tokens[first:])
    else:
        region = shape.total_tokens  # the worst case: the whole prompt
    write = float(rates.write_1h if shape.ttl_s >= LONGEST_TTL_S else rates.write_5m)
    extra = max(0, region - plan.tokens_cut) * write - region * float(rates.cache_read)
    why = refusal(budget, extra, conv.staked_usd, conv.banked_usd, conv.cost_usd, cap_pct)
    if why is not None:
        return Plan(natural_break=plan.natural_break, figures=plan.figures, reason=f"{GUESS}, not bet: {why}")
    plan.risk_usd = max(0.0, extra)
    plan.reason = f"{plan.reason}; {GUESS}: ${plan.risk_usd:.4f} staked on it"
    plan.figures.update({"guess": True, "extra_usd": round(plan.risk_usd, 8), "rewrite_tokens": region})
    return plan
