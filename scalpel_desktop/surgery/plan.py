"""The economist's vocabulary: what it is told, what it remembers, what it answers.

``RequestShape`` (one request as the economist sees it), ``Candidate`` (a
dead result the surgeon could stub), ``Break`` (where the request stops
matching a live cache entry), ``Plan`` (the answer), and the per-conversation
state (``ModelState``, ``ConversationState``) with the bounds that keep it
small. Plain data: the economist (``surgery/economist.py``) and the payback
arithmetic (``surgery/payback.py``) both read it, neither reads the other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Hashable, Sequence

from scalpel_desktop.surgery.digests import Digests, common_prefix_packed, packed
from scalpel_desktop.wire.cache_rules import COLD_BREAKS, LONGEST_TTL_S

# No cut may bring a prompt under the largest minimum cacheable length (SPEC 3:
# 1,024 to 4,096): an uncacheable prompt pays the full input price every turn.
MIN_CACHEABLE_GUARD = 4096
IN_FLIGHT_BOUND_S = 900.0
MAX_STATES_PER_MODEL = 8
MAX_ENTRIES_PER_MODEL = 64
COLD_REASONS = COLD_BREAKS  # (one home: wire/cache_rules.py, which the ledger's reader shares)


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
    # Warm policies: may the last block of unit i take the free cache marker (a pin)?
    # And how many markers the request may still carry (4 minus those it has).
    unit_pinnable: Sequence[bool] | None = None
    free_markers: int = 0
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
    # How far the request shares the prefix of a live cache it does not extend: another
    # model's, or an older history of its own model the client diverged from (it may go
    # back to it). A warm cut below this would force a re-write there that no pin covers.
    others_index: int = 0
    # The ledger's break after a restart that the proxy cannot vouch for (``surgery/resume.py``):
    # a cut there is a bet, priced and paid from the user's risk budget.
    guess: bool = False


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
    # A warm cut's pinned read boundary: the free cache marker goes on the last block of
    # unit ``pin_unit`` (whose entry is surely live), with this TTL. None: no pin.
    pin_unit: int | None = None
    pin_ttl: str = "5m"
    # A warm cut's priced cost now (dollars; negative: a gain now), spent from the
    # conversation's risk budget (``ConversationState.banked_usd``) once it is sent.
    risk_usd: float = 0.0


@dataclass
class EntryMark:
    """Where a request we sent wrote (or hit) a cache entry: the end of its ``units`` first units.

    ``digest`` identifies the prefix up to there (system, tools, settings and the
    units' hashes as sent), so a later request can tell it shares that entry;
    ``at`` is when it was sent (the entry lives at least ``ttl_s`` from then, under
    any reading of what refreshes it); ``confirmed`` once its response came back
    with usage counts (a refused request wrote nothing)."""

    units: int
    at: float
    ttl_s: float
    digest: int
    serial: int
    tokens: int = 0  # estimated tokens of the prefix up to there (0: unknown)
    confirmed: bool = False
    # The real tokens cached up to there (cache read + written, from the usage that confirmed
    # it; None: not known). A pin's own refresh is believed only when a later read stopped
    # exactly there (its cache_read equal to this).
    cached: int | None = None

    def surely_live(self, at: float, margin: float) -> bool:
        return self.confirmed and at + margin < self.at + self.ttl_s


@dataclass
class ModelState:
    """One request as sent to one model: its prefix may still be cached."""

    unit_hashes: Sequence[Hashable]  # packed (``surgery/digests.py``) when they are digests
    tools_hash: Hashable
    system_hash: Hashable
    settings_hash: Hashable
    ttl_s: float
    sent_at: float
    ended_at: float | None = None  # None while the response is in flight
    request_serial: int = 0
    last_cache_read: int | None = None
    # What its answer read from cache: an entry surely there then. A read after a long gap that reaches
    # as far says the conversation's entries outlived the gap (surgery/ttl_margin.py).
    cached_tokens: int = 0

    def expired(self, at: float, margin: float) -> bool:
        return at > self.expires_at(margin)

    def expires_at(self, margin: float) -> float:
        """The time after which its cache is called expired (``expired``)."""
        if self.ended_at is None:
            # In flight: being refreshed now. A response never reported (a
            # crashed stream) stops counting after a generous bound.
            return self.sent_at + self.ttl_s + margin + IN_FLIGHT_BOUND_S
        return max(self.sent_at, self.ended_at) + self.ttl_s + margin


@dataclass
class ConversationState:
    # Per model, the recent requests whose entries may still be live, oldest
    # first. A request that only extends an earlier one replaces it; one that
    # diverged (a client rewrite) keeps the earlier one: the client may go back
    # to it (real sessions oscillate), and its entries are still in the cache.
    models: dict[str, list[ModelState]] = field(default_factory=dict)
    turns: int = 0
    natural_breaks: int = 0  # requests that found the cache cold or rewritten
    # Per model: where recent requests wrote or hit cache entries (Claude Code marks
    # the last block of each request; a pin marks an earlier one).
    entries: dict[str, list[EntryMark]] = field(default_factory=dict)
    first_tokens: int = 0  # estimated prompt of the first request (context growth per turn)
    last_tokens: int = 0
    # candidates already dead at the previous decision (cut at death); packed (``surgery/digests.py``)
    dead_seen: bytes | frozenset = frozenset()
    # This conversation's part of the user's risk budget (``surgery/budget.py``; dollars, the
    # economist's estimates): what its cuts have surely saved so far (each stub a request
    # carried, at the rate its position was billed at), what its warm cuts staked (their priced
    # extra), and what it has cost so far (its usage counts at the price table: the cap's base).
    banked_usd: float = 0.0
    staked_usd: float = 0.0
    cost_usd: float = 0.0
    # Its states and entry marks were let go of, every one expired after this time
    # (``Economist.forget_cold``); None: never.
    cold_since: float | None = None


def prefix_digest(shape: "RequestShape", hashes: Sequence[Hashable], units: int) -> int:
    """One number for the prefix of ``shape`` up to unit ``units`` (``hashes``: the units as sent)."""
    return hash((shape.system_hash, shape.tools_hash, shape.settings_hash, tuple(hashes[:units])))


def common_prefix(a: Sequence[Hashable], b: Sequence[Hashable]) -> int:
    """How many leading hashes ``a`` and ``b`` share (a packed one read as bytes: ``surgery/digests.py``)."""
    if isinstance(a, Digests) or isinstance(b, Digests):
        pa, pb = packed(a), packed(b)
        if isinstance(pa, Digests) and isinstance(pb, Digests):
            return common_prefix_packed(pa, pb)
    n = min(len(a), len(b))
    if n and a[n - 1] == b[n - 1] and tuple(a[:n]) == tuple(b[:n]):
        return n  # the common case: pure append
    lo = 0
    for i in range(n):
        if a[i] != b[i]:
            return i
        lo = i + 1
    return lo


def forget_lost(conv: "ConversationState", model: str, serial: int, cache_read: int) -> None:
    """A read that stopped below an entry held as surely live says the provider lost it (and every
    entry after it, which hold it): none of them is pinned again (issue 23: one such pin re-wrote
    $0.70 more than was priced). Every mark of ``model`` ending past the read goes, whatever prefix it
    holds: one of a history this request diverged from may have lived on, but a pin there is only
    missed (the rewrite priced at its worst case instead), never dearer. O(marks), no digest."""
    for m in conv.entries.get(model, ()):
        if m.serial != serial and m.confirmed and m.cached is not None and m.cached > cache_read:
            m.confirmed = False
