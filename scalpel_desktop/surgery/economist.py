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
  response, plus ``ttl_margin_s``), or tools / system / settings changed (a
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
it - seen for the first time is warm until known: its break is the last
message, so nothing is cut on a guess.

Policies: ``off``; ``cold`` (default) cuts only at or after the break, and only
a batch worth ``batch_min_tokens``; ``payback`` also cuts before the break when
the saving at the cache-read price over a conservative estimate of the
remaining turns repays the rewrite by ``payback_factor``.

Pure: no I/O, no clock. Prices come from ``accounting/prices.py`` (the caller
passes a table with ``rates(model)``); nothing here hard-codes a multiplier.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Hashable, Mapping, Sequence

from scalpel_desktop.config import setting

TTL_SECONDS = {"5m": 300.0, "1h": 3600.0, "24h": 86400.0}
LONGEST_TTL_S = 3600.0  # Anthropic's longest; "when unsure assume the longer"
# No cut may bring a prompt under the largest minimum cacheable length (SPEC 3:
# 1,024 to 4,096): an uncacheable prompt pays the full input price every turn.
MIN_CACHEABLE_GUARD = 4096
IN_FLIGHT_BOUND_S = 900.0
MAX_STATES_PER_MODEL = 8
MAX_ENTRIES_PER_MODEL = 64
LOOKBACK_BLOCKS = 20  # a breakpoint looks back about 20 blocks for an earlier entry (SPEC 3)
COLD_REASONS = ("ttl-expired", "system-changed", "tools-changed", "settings-changed", "client-rewrite")


@dataclass(frozen=True)
class RequestShape:
    """What the economist needs to know about one request (after replayed cuts)."""

    key: Hashable  # ConversationKey or (session_id, agent_id)
    model: str
    at: float  # when the request arrived (clock.now())
    unit_hashes: Sequence[Hashable]  # one per history unit, cache markers excluded
    tools_hash: Hashable = ""
    system_hash: Hashable = ""
    settings_hash: Hashable = ""
    ttl_s: float = LONGEST_TTL_S  # the TTL this request asks for
    tool_changes_ok: bool = False  # mid-conversation-tool-changes beta present
    unit_tokens: Sequence[int] | None = None  # estimated tokens per unit (payback)
    unit_blocks: Sequence[int] | None = None  # content blocks per unit (payback: the lookback)
    prefix_tokens: int = 0  # estimated tokens of tools + system
    total_tokens: int = 0  # estimated tokens of the whole prompt
    # A rewrite the caller observed by other means (the bench, from a transcript's
    # real usage): the client changed history from this unit on.
    rewrite_at: int | None = None


@dataclass(frozen=True)
class Candidate:
    """A dead result the surgeon could stub."""

    id: str  # tool_use_id
    unit_index: int
    tokens: int  # estimated tokens of the original content
    stub_tokens: int  # estimated tokens of the stub that replaces it
    kind: str = ""

    @property
    def saving(self) -> int:
        return max(0, self.tokens - self.stub_tokens)


@dataclass(frozen=True)
class Break:
    index: int  # first unit not matching a live cache entry (cuts at >= index are free)
    reason: str  # ttl-expired | system-changed | tools-changed | settings-changed |
    #              client-rewrite | append | first-seen | model-first-seen | live:<model>
    own_index: int  # the break for the request's own model alone
    live_models: tuple[str, ...] = ()


@dataclass
class Plan:
    """The economist's answer for one request."""

    cut_ids: list[str] = field(default_factory=list)
    action: str = "unchanged"  # cut | unchanged
    reason: str = ""
    natural_break: Break | None = None
    tokens_cut: int = 0  # estimated tokens removed by the new cuts
    rewrite_tokens: int = 0  # tokens before the break re-billed as a write (payback)
    figures: dict[str, Any] = field(default_factory=dict)


@dataclass
class ModelState:
    """One request as sent to one model: its prefix may still be cached."""

    unit_hashes: tuple
    tools_hash: Hashable
    system_hash: Hashable
    settings_hash: Hashable
    ttl_s: float
    sent_at: float
    ended_at: float | None = None  # None while the response is in flight
    request_serial: int = 0
    last_cache_read: int | None = None

    def expired(self, at: float, margin: float) -> bool:
        if self.ended_at is None:
            # In flight: being refreshed now. A response never reported (a
            # crashed stream) stops counting after a generous bound.
            return at > self.sent_at + self.ttl_s + margin + IN_FLIGHT_BOUND_S
        return at > max(self.sent_at, self.ended_at) + self.ttl_s + margin


@dataclass
class ConversationState:
    # Per model, the recent requests whose entries may still be live, oldest
    # first. A request that only extends an earlier one replaces it; one that
    # diverged (a client rewrite) keeps the earlier one: the client may go back
    # to it (real sessions oscillate), and its entries are still in the cache.
    models: dict[str, list[ModelState]] = field(default_factory=dict)
    turns: int = 0
    natural_breaks: int = 0  # requests that found the cache cold or rewritten
    # Per model: (unit count, time) of recent requests - where their cache
    # entries end (Claude Code marks the last block of each request).
    entries: dict[str, list[tuple[int, float]]] = field(default_factory=dict)


class _Settings:
    """Reads live settings from a Config (or a plain mapping) at each decision."""

    def __init__(self, config: Any):
        self.config = config

    def __getitem__(self, name: str) -> Any:
        return setting(self.config, name)


class Economist:
    """Per-conversation cache state and the cut decision. One per proxy."""

    def __init__(self, config: Any = None, prices: Any = None):
        self.settings = _Settings(config if config is not None else {})
        self.prices = prices
        self.conversations: dict[Hashable, ConversationState] = {}
        self._serial = 0

    # ---------------------------------------------------------------- state
    def record_sent(self, shape: RequestShape, sent_hashes: Sequence[Hashable] | None = None,
                    brk: Break | None = None) -> int:
        """Remember what was sent for ``shape`` (``sent_hashes``: after our cuts). Returns a serial."""
        self._serial += 1
        conv = self.conversations.setdefault(shape.key, ConversationState())
        if conv.turns and (brk or self.natural_break(shape)).reason in COLD_REASONS:
            conv.natural_breaks += 1
        conv.turns += 1
        ents = conv.entries.setdefault(shape.model, [])
        ents.append((len(sent_hashes if sent_hashes is not None else shape.unit_hashes), shape.at))
        del ents[:-MAX_ENTRIES_PER_MODEL]
        new = ModelState(
            unit_hashes=tuple(sent_hashes if sent_hashes is not None else shape.unit_hashes),
            tools_hash=shape.tools_hash,
            system_hash=shape.system_hash,
            settings_hash=shape.settings_hash,
            ttl_s=shape.ttl_s,
            sent_at=shape.at,
            request_serial=self._serial,
        )
        margin = float(self.settings["ttl_margin_s"])
        kept = []
        for old in conv.models.get(shape.model, []):
            if old.expired(shape.at, margin):
                continue
            same_region = (old.system_hash, old.tools_hash, old.settings_hash) == (
                new.system_hash, new.tools_hash, new.settings_hash)
            if same_region and _common_prefix(old.unit_hashes, new.unit_hashes) >= len(old.unit_hashes) - 1:
                continue  # the new request extends it: its entries are the new one's too
            kept.append(old)
        kept.append(new)
        conv.models[shape.model] = kept[-MAX_STATES_PER_MODEL:]
        return self._serial

    def record_finished(self, key: Hashable, model: str, serial: int, finished_at: float,
                        cache_read: int | None = None) -> None:
        """The response of request ``serial`` ended at ``finished_at``: the cache TTL runs from here."""
        conv = self.conversations.get(key)
        for ms in (conv.models.get(model, []) if conv else []):
            if ms.request_serial == serial:
                ms.ended_at = finished_at if ms.ended_at is None else max(ms.ended_at, finished_at)
                ms.last_cache_read = cache_read
                return

    # ---------------------------------------------------------------- break
    def natural_break(self, shape: RequestShape) -> Break:
        units = shape.unit_hashes
        last = max(len(units) - 1, 0)  # the last message is always rewritten
        margin = float(self.settings["ttl_margin_s"])
        conv = self.conversations.get(shape.key)
        if conv is None:
            return Break(last, "first-seen", last)
        own_states = conv.models.get(shape.model)
        if not own_states:
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
                        index, reason = got, why
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
                other = min(_common_prefix(s.unit_hashes, units), last)
                if shape.rewrite_at is not None:
                    other = min(other, max(0, shape.rewrite_at))
                if other > index:
                    index, reason = other, f"live:{model}"
        return Break(index, reason, own_index, tuple(sorted(live_models)))

    @staticmethod
    def _own_break(s: ModelState, shape: RequestShape, last: int) -> tuple[int, str]:
        if s.system_hash != shape.system_hash:
            return 0, "system-changed"
        if s.tools_hash != shape.tools_hash and not shape.tool_changes_ok:
            return 0, "tools-changed"
        if s.settings_hash != shape.settings_hash:
            return 0, "settings-changed"
        cp = _common_prefix(s.unit_hashes, shape.unit_hashes)
        if shape.rewrite_at is not None:
            cp = min(cp, max(0, shape.rewrite_at))
        if cp < len(s.unit_hashes) - 1:
            # More than the previous last message differs: the client rewrote history.
            return min(cp, last), "client-rewrite"
        return min(cp, last), "append"

    # ---------------------------------------------------------------- decide
    def decide(self, shape: RequestShape, candidates: Sequence[Candidate],
               policy: str | None = None) -> Plan:
        policy = policy or str(self.settings["policy"])
        brk = self.natural_break(shape)
        plan = Plan(natural_break=brk)
        plan.figures = {"break": brk.index, "break_reason": brk.reason, "units": len(shape.unit_hashes),
                        "candidates": len(candidates), "dead_tokens": sum(c.saving for c in candidates)}
        if policy == "off":
            plan.reason = "policy off"
            return plan
        if not candidates:
            plan.reason = f"nothing dead (break {brk.index}: {brk.reason})"
            return plan
        batch_min = int(self.settings["batch_min_tokens"])
        free = [c for c in candidates if c.unit_index >= brk.index]
        free_saving = sum(c.saving for c in free)
        plan.figures["free_tokens"] = free_saving
        if policy == "payback":
            warm = self._payback(shape, brk, candidates, free, batch_min)
            if warm is not None:
                return self._guard(shape, warm, brk)
        if free and free_saving >= batch_min:
            plan.cut_ids = [c.id for c in free]
            plan.action = "cut"
            plan.tokens_cut = free_saving
            plan.reason = f"free: break at unit {brk.index} ({brk.reason})"
            plan.figures.update({"tokens_cut": free_saving, "rewrite_tokens": 0})
            return self._guard(shape, plan, brk)
        if free:
            plan.reason = f"batch too small: {free_saving} < {batch_min} tokens free (break {brk.index}: {brk.reason})"
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
            from scalpel_desktop.accounting.prices import PriceTable

            self.prices = PriceTable.load()
        return self.prices.rates(model)

    def _payback(self, shape: RequestShape, brk: Break, candidates: Sequence[Candidate],
                 free: list[Candidate], batch_min: int) -> Plan | None:
        from scalpel_desktop.surgery.payback import payback_plan

        return payback_plan(self, shape, brk, candidates, free, batch_min)


def _common_prefix(a: Sequence[Hashable], b: Sequence[Hashable]) -> int:
    n = min(len(a), len(b))
    if n and a[n - 1] == b[n - 1] and tuple(a[:n]) == tuple(b[:n]):
        return n  # the common case: pure append
    lo = 0
    for i in range(n):
        if a[i] != b[i]:
            return i
        lo = i + 1
    return lo


def ttl_seconds(ttl: str | None) -> float:
    """Seconds for a ``cache_control.ttl`` value; unknown or absent: the longer one."""
    if ttl is None:
        return LONGEST_TTL_S
    return TTL_SECONDS.get(ttl, LONGEST_TTL_S)


def tool_changes_beta(headers: Mapping[str, str]) -> bool:
    """True when the client declared the ``mid-conversation-tool-changes-*`` beta."""
    beta = ""
    for k, v in headers.items():
        if k.lower() == "anthropic-beta":
            beta = v
            break
    return any(b.strip().startswith("mid-conversation-tool-changes") for b in beta.split(","))
