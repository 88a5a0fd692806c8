"""The economist: decides WHEN a dead tool result may be cut.

Cutting changes the prompt prefix. Everything after the first changed byte is
billed again as a cache write, unless it was going to be written anyway. So
the question is never "is this dead?" (the doom spans answer that) but "where
does this request stop matching a live cache entry?" - the NATURAL BREAK - and
"is anything before it worth re-writing?".

Per conversation key (session id, agent id) and per model we keep what was
last SENT (after our own cuts): the per-unit prefix hashes, the hashes of
tools, system and the settings that break the message cache, the TTL asked
for, when the request was sent and when its response ended. For a new request
the natural break (in units = history items, 0 = the first message) is:

* 0 when the model's cache expired (TTL counted from the end of the previous
  response, plus a margin learned from the user's own reads after long gaps,
  ``surgery/ttl_margin.py``), or tools / system / settings changed (a
  tools change does not count under the ``mid-conversation-tool-changes-*``
  beta);
* else the first unit the client itself rewrote (auto-compaction,
  interruptions, background-task notifications), found by comparing the unit
  hashes with the previous request of the conversation;
* at the latest the always-rewritten last message.

A cut is replayed on every later request of the session whatever its model,
so a cut at unit ``p`` is free only when ``p >= break`` for EVERY model whose
cache for this session may still be live: the effective break is the maximum
over live models (a side request to a small model with a different history
matches nothing, so it constrains nothing). A conversation - or a model within
it - seen for the first time is warm until known (its break is the last
message: nothing cut on a guess), unless the ledger shows its cache expired
before a restart (``surgery/resume.py``).

Policies (``surgery/policies.py``): ``off``; ``cold`` cuts only at or after
the break, and only a batch worth ``batch_min_tokens``; ``death`` (the default)
and ``payback`` also cut before the break when the saving at the cache-read
price over a conservative estimate of the remaining turns
(``surgery/remaining.py``, from the user's own ``history``) repays the rewrite
by ``payback_factor``, the read boundary pinned by the free cache marker on an
entry known to be live (``surgery/payback.py``), each such bet paid from the
user's risk budget. The break is computed once per request by the caller and
handed to ``decide`` and ``record_sent``.

Pure: no I/O, no clock. Prices come from ``accounting/prices.py`` (the caller
passes a table with ``rates(model)``); nothing here hard-codes a multiplier.
"""

from __future__ import annotations

from typing import Any, Hashable, Sequence

from scalpel_desktop.accounting.prices import PriceTable
from scalpel_desktop.config import setting
from scalpel_desktop.surgery.plan import (
    COLD_REASONS,
    MAX_ENTRIES_PER_MODEL,
    MAX_STATES_PER_MODEL,
    MIN_CACHEABLE_GUARD,
    Break,
    Candidate,
    ConversationState,
    EntryMark,
    ModelState,
    Plan,
    RequestShape,
    common_prefix,
    forget_lost,
    prefix_digest,
)
from scalpel_desktop.surgery.budget import RiskBudget
from scalpel_desktop.surgery.digests import packed, packed_ids
from scalpel_desktop.surgery.policies import policy_named
from scalpel_desktop.surgery.remaining import History
from scalpel_desktop.surgery.resume import Resumes, point_fields, priced_guess
from scalpel_desktop.surgery.ttl_margin import learned_margin, overrun
from scalpel_desktop.wire.cache_rules import tool_changes_beta  # noqa: F401 - (its old home: callers import it here)

MAX_OVERRUNS = 256  # the most recent observations kept: bounds memory, not fitted

# How often, in seconds of the clock requests arrive on, the economist lets go of what it keeps of
# conversations whose every cache has expired (``forget_cold``): a sweep over its conversations.
FORGET_EVERY_S = 60.0


class _Settings:
    """Reads live settings from a Config (or a plain mapping) at each decision."""

    def __init__(self, config: Any):
        self.config = config

    def __getitem__(self, name: str) -> Any:
        return setting(self.config, name)


class Economist:
    """Per-conversation cache state and the cut decision. One per proxy."""

    def __init__(self, config: Any = None, prices: Any = None, history: History | None = None,
                 budget: RiskBudget | None = None, resumes: Resumes | None = None):
        self.settings = _Settings(config if config is not None else {})
        self.prices = prices
        self.history = history  # the user's past conversations (the ledger), for the warm policies
        # the user's risk budget (the ledger's, read at start): what the warm policies' bets are paid from
        self.budget = budget if budget is not None else RiskBudget()
        # (seconds past the TTL, entry read?) of every request after a gap past its TTL (surgery/ttl_margin.py)
        self.overruns: list[tuple[float, bool]] = list(history.overruns) if history is not None else []
        self._pending_gap: dict[int, tuple[float, float, int]] = {}  # serial -> (gap, ttl, tokens cached before)
        self._margin: tuple = (None, 0.0)  # ((the prior, observations since start), the margin): ttl_margin
        self._observed = 0
        self.conversations: dict[Hashable, ConversationState] = {}
        self.resumes = resumes if resumes is not None else Resumes()  # the ledger's, after a restart (resume.py)
        self._serial = 0
        self._swept_at = float("-inf")  # (forget_cold)

    # ---------------------------------------------------------------- state
    def record_sent(self, shape: RequestShape, sent_hashes: Sequence[Hashable] | None = None,
                    brk: Break | None = None, pin_unit: int | None = None, risk_usd: float = 0.0) -> int:
        """Remember what was sent for ``shape`` (``sent_hashes``: after our cuts; ``pin_unit``: the
        unit whose last block carried our pin marker; ``risk_usd``: a warm cut's priced cost, spent
        from the conversation's risk budget). Returns a serial."""
        self._serial += 1
        conv = self.conversations.get(shape.key)
        if conv is None or shape.model not in conv.models:  # (its resume point, if any, used up)
            conv = self.conversations[shape.key] = self.resumes.seed(shape, conv, self._rates)
        if risk_usd:
            conv.staked_usd += risk_usd
            self.budget.stake(risk_usd)
        if conv.turns and (brk or self.natural_break(shape)).reason in COLD_REASONS:
            conv.natural_breaks += 1
        if not conv.turns:
            conv.first_tokens = shape.total_tokens
        conv.turns += 1
        conv.last_tokens = shape.total_tokens
        # (packed once: a dropped conversation's ghost hands its packed hashes over and keeps the same object)
        hashes = packed(sent_hashes if sent_hashes is not None else shape.unit_hashes)
        ents = conv.entries.setdefault(shape.model, [])
        if pin_unit is not None and 0 <= pin_unit < len(hashes):
            u = pin_unit + 1
            old = next((m for m in reversed(ents) if m.units == u), None)
            # Refreshed by this request only if its read stops there (record_finished checks).
            ents.append(EntryMark(u, shape.at, old.ttl_s if old else shape.ttl_s, prefix_digest(shape, hashes, u),
                                  self._serial, old.tokens if old else 0,
                                  cached=old.cached if old and old.cached is not None else -1))
        ents.append(EntryMark(len(hashes), shape.at, shape.ttl_s, prefix_digest(shape, hashes, len(hashes)),
                              self._serial, shape.total_tokens))
        del ents[:-MAX_ENTRIES_PER_MODEL]
        new = ModelState(
            unit_hashes=hashes,  # (packed above: one allocation, not one object per message)
            tools_hash=shape.tools_hash,
            system_hash=shape.system_hash,
            settings_hash=shape.settings_hash,
            ttl_s=shape.ttl_s,
            sent_at=shape.at,
            request_serial=self._serial,
        )
        margin = self.ttl_margin()
        prev = max(conv.models.get(shape.model, []), key=lambda m: m.request_serial, default=None)
        if prev is not None and prev.ended_at is not None and prev.cached_tokens:
            self._pending_gap[self._serial] = (shape.at - max(prev.sent_at, prev.ended_at), prev.ttl_s,
                                               prev.cached_tokens)
            if len(self._pending_gap) > MAX_OVERRUNS:  # answers that never came: the oldest go
                del self._pending_gap[next(iter(self._pending_gap))]
        kept = []
        for old in conv.models.get(shape.model, []):
            if old.expired(shape.at, margin):
                continue
            same_region = (old.system_hash, old.tools_hash, old.settings_hash) == (
                new.system_hash, new.tools_hash, new.settings_hash)
            if same_region and common_prefix(old.unit_hashes, new.unit_hashes) >= len(old.unit_hashes) - 1:
                continue  # the new request extends it: its entries are the new one's too
            kept.append(old)
        kept.append(new)
        conv.models[shape.model] = kept[-MAX_STATES_PER_MODEL:]
        return self._serial

    def record_finished(self, key: Hashable, model: str, serial: int, finished_at: float,
                        cache_read: int | None = None, cache_written: int | None = None, ok: bool = True,
                        saved_usd: float = 0.0, cost_usd: float = 0.0) -> tuple[int, str, float] | None:
        """The response of request ``serial`` ended at ``finished_at``: the cache TTL runs from here.
        ``ok``: it came back with usage counts; ``cache_read`` / ``cache_written``: its cached
        tokens (None: not reported); ``saved_usd``: what its replayed stubs surely saved
        (``realized.banked_credit``), banked in the user's risk budget; ``cost_usd``: what the
        request cost (its usage at the price table), the base of the conversation's cap
        (``surgery/budget.py``).

        Its own entry (the end of its last message, where the client's last marker is) is
        surely there once anything was cached: the last marker's prefix is the longest, so if
        any prefix reached the minimum cacheable length, that one did. A pin's entry is
        refreshed under every reading only when the read stopped exactly there (its
        ``cache_read`` equal to the tokens cached up to the pin); else the pin is not counted
        as a refresh (a hit at a breakpoint that is not the one read may refresh nothing).
        Returns what the ledger keeps for a resume after a restart (``resume.point_fields``)."""
        conv = self.conversations.get(key)
        if conv is not None and ok:
            known = cache_read is not None and cache_written is not None
            for mark in conv.entries.get(model, ()):
                if mark.serial != serial:
                    continue
                if mark.cached is None:  # the request's own entry
                    if not known:
                        mark.confirmed = True  # (a caller without cache counts: believed as before)
                    elif cache_read + cache_written > 0:
                        mark.confirmed, mark.cached = True, cache_read + cache_written
                elif known and mark.cached >= 0 and cache_read == mark.cached:
                    mark.confirmed = True  # the read stopped at the pin: refreshed under every reading
            if known:
                forget_lost(conv, model, serial, cache_read)
            if saved_usd > 0:
                conv.banked_usd += saved_usd
                self.budget.bank(saved_usd)
            if cost_usd > 0:
                conv.cost_usd += cost_usd
        gap = self._pending_gap.pop(serial, None)
        if gap is not None and ok and cache_read is not None:
            seen = overrun(gap[0], gap[1], gap[2], cache_read)
            if seen is not None:
                self.overruns.append(seen)
                del self.overruns[:-MAX_OVERRUNS]
                self._observed += 1
        for ms in (conv.models.get(model, []) if conv else []):
            if ms.request_serial == serial:
                ms.ended_at = finished_at if ms.ended_at is None else max(ms.ended_at, finished_at)
                ms.last_cache_read = cache_read
                if ok and cache_read is not None:
                    ms.cached_tokens = cache_read
                return point_fields(ms) if ok else None
        return None

    def ttl_margin(self) -> float:
        """Seconds past its TTL a cache is still called live (``surgery/ttl_margin.py``: the user's own
        reads after long gaps, else the ``ttl_margin_s`` prior), found again only when either changed."""
        prior = float(self.settings["ttl_margin_s"])
        key = (prior, self._observed)
        if self._margin[0] != key:
            self._margin = (key, learned_margin(self.overruns, prior)[0])
        return self._margin[1]

    def forget_cold(self, now: float, every_s: float = FORGET_EVERY_S) -> int:
        """Let go of what no later request can use; at most once every ``every_s`` (``now``: when
        the latest request arrived). Returns how many conversations were let go of. A conversation
        whose every response ended and whose every cache and entry mark expired by ``now`` keeps
        only ``cold_since`` (when the last expired): a later request finds the break its whole state
        would give (0, "ttl-expired"); one dated before it (the clock set back) is warm until known.
        Its turns, tokens, breaks, dead ids and risk budget stay (``tests/surgery/test_economist_forget.py``).
        Without this every conversation ever seen was kept whole for as long as the proxy ran."""
        if now < self._swept_at + every_s:
            return 0
        self._swept_at = now
        margin = self.ttl_margin()
        forgot = 0
        for conv in self.conversations.values():
            states = [s for ms in conv.models.values() for s in ms]
            if not states or any(s.ended_at is None for s in states):
                continue  # let go of already, or a response still out
            # (EntryMark.surely_live: at + margin < m.at + m.ttl_s)
            since = max([s.expires_at(margin) for s in states]
                        + [m.at + m.ttl_s - margin for marks in conv.entries.values() for m in marks])
            if now <= since:
                continue  # a cache may still be live
            conv.models = {model: [] for model in conv.models}
            conv.entries = {}
            conv.cold_since = since
            forgot += 1
        return forgot

    # ---------------------------------------------------------------- break
    def natural_break(self, shape: RequestShape) -> Break:
        units = shape.unit_hashes
        last = max(len(units) - 1, 0)  # the last message is always rewritten
        margin = self.ttl_margin()
        conv = self.conversations.get(shape.key)
        if conv is None or shape.model not in conv.models:
            resumed = self.resumes.resumed_break(shape, margin, conv) if self.resumes.points else None
            if resumed is not None:
                return resumed  # the ledger's (after a restart): every cache of it expired
        if conv is None:
            return Break(last, "first-seen", last)
        others = 0  # the longest prefix shared with a live cache this request does not extend
        own_states = conv.models.get(shape.model)
        if own_states == [] and conv.cold_since is not None and shape.at > conv.cold_since:
            index, reason = 0, "ttl-expired"  # every state had expired when they were let go of (forget_cold)
        elif not own_states:
            index, reason = last, "model-first-seen"
        else:
            live = [s for s in own_states if not s.expired(shape.at, margin)]
            if not live:
                index, reason = 0, "ttl-expired"
            else:
                index, reason = -1, ""
                for s in reversed(live):  # newest first: its reason wins ties
                    got, why = self._own_break(s, shape, last)
                    if got > index:
                        index, reason, others = got, why, max(others, index)
                    else:
                        others = max(others, got)  # an older history the client may go back to
        own_index = index
        live_models = []
        for model, states in conv.models.items():
            if model == shape.model:
                continue
            for s in states:
                if s.expired(shape.at, margin):
                    continue
                if model not in live_models:
                    live_models.append(model)
                # Another model's live cache: a cut inside the part it shares with
                # this request would make that model's next request miss there.
                other = min(common_prefix(s.unit_hashes, units), last)
                if shape.rewrite_at is not None:
                    other = min(other, max(0, shape.rewrite_at))
                others = max(others, other)
                if other > index:
                    index, reason = other, f"live:{model}"
        return Break(index, reason, own_index, tuple(sorted(live_models)), max(0, others))

    @staticmethod
    def _own_break(s: ModelState, shape: RequestShape, last: int) -> tuple[int, str]:
        if s.system_hash != shape.system_hash:
            return 0, "system-changed"
        if s.tools_hash != shape.tools_hash and not shape.tool_changes_ok:
            return 0, "tools-changed"
        if s.settings_hash != shape.settings_hash:
            return 0, "settings-changed"
        cp = common_prefix(s.unit_hashes, shape.unit_hashes)
        if shape.rewrite_at is not None:
            cp = min(cp, max(0, shape.rewrite_at))
        if cp < len(s.unit_hashes) - 1:
            # More than the previous last message differs: the client rewrote history.
            return min(cp, last), "client-rewrite"
        return min(cp, last), "append"

    def sent_hashes(self, key: Hashable) -> Sequence[Hashable] | None:
        """The hashes of the last request recorded for a conversation, as kept (packed)."""
        conv = self.conversations.get(key)
        states = [m for ms in conv.models.values() for m in ms] if conv is not None else []
        return max(states, key=lambda m: m.request_serial).unit_hashes if states else None

    def entry_units(self, key: Hashable) -> set[int]:
        """Where a conversation's cache entries end (message counts, every model's)."""
        conv = self.conversations.get(key)
        return {m.units for marks in conv.entries.values() for m in marks} if conv is not None else set()

    # ---------------------------------------------------------------- decide
    def decide(self, shape: RequestShape, candidates: Sequence[Candidate],
               policy: str | None = None, brk: Break | None = None) -> Plan:
        """The plan for ``shape`` (``brk``: its natural break, when the caller has it)."""
        pol = policy_named(policy or str(self.settings["policy"]))
        if brk is None:
            brk = self.natural_break(shape)
        plan = Plan(natural_break=brk)
        plan.figures = {"break": brk.index, "break_reason": brk.reason, "units": len(shape.unit_hashes),
                        "candidates": len(candidates), "dead_tokens": sum(c.saving for c in candidates)}
        if not pol.cuts:
            plan.reason = "policy off"
            return plan
        if not candidates:
            plan.reason = f"nothing dead (break {brk.index}: {brk.reason})"
            return plan
        batch_min, refused = int(self.settings["batch_min_tokens"]), ""
        free = [c for c in candidates if c.unit_index >= brk.index]
        free_saving = sum(c.saving for c in free)
        plan.figures["free_tokens"] = free_saving
        conv = self.conversations.get(shape.key)
        if pol.warm and conv is not None:
            # A conversation never seen is warm until its cache state is known: no warm cut on a
            # guess (SPEC 5). Its next request, its usage known, may make the cut this one would.
            warm = pol.warm_plan(shape, brk, candidates, free, batch_min, conv, self.settings, self._rates,
                                 self.history, self.budget)
            conv.dead_seen = packed_ids(c.id for c in candidates)  # kept for turns: packed
            if warm is not None and warm.action == "cut":
                return self._guard(shape, warm, brk)
            refused = warm.reason if warm is not None else ""  # a cut the budget would not pay for
        if free and free_saving >= batch_min:
            plan.cut_ids, plan.action, plan.tokens_cut = [c.id for c in free], "cut", free_saving
            plan.reason = f"free: break at unit {brk.index} ({brk.reason})"
            plan.figures.update({"tokens_cut": free_saving, "rewrite_tokens": 0, "boundary": "free",
                                 "read_stops_at": brk.index})
            if brk.guess:  # the ledger's break, after a restart the proxy cannot vouch for: a bet
                plan = priced_guess(plan, shape, free, conv or self.resumes.state_for(shape.key, self._rates),
                                    self._rates(shape.model), self.budget, float(self.settings["risk_cap_pct"]))
            return self._guard(shape, plan, brk)
        if free:
            plan.reason = f"batch too small: {free_saving} < {batch_min} tokens free (break {brk.index}: {brk.reason})"
        elif refused:
            plan.reason = f"{refused} (break {brk.index}: {brk.reason})"
        else:
            plan.reason = f"warm: nothing dead at or after break {brk.index} ({brk.reason})"
        return plan

    def _guard(self, shape: RequestShape, plan: Plan, brk: Break) -> Plan:
        if shape.total_tokens and shape.total_tokens - plan.tokens_cut < MIN_CACHEABLE_GUARD:
            return Plan(natural_break=brk, reason="prompt would fall under the minimum cacheable size",
                        figures=plan.figures)
        return plan

    def _rates(self, model: str) -> Any:
        if self.prices is None:
            self.prices = PriceTable.load()
        return self.prices.rates(model)
