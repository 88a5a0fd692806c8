"""One arm of the anchored simulator: a policy's own cache, billed request by request.

``bench/simulate.py`` builds what every arm of a sequence shares (the units,
their tokens, the read boundaries from the usage); an ``Arm`` keeps its own
cache and unit chain and bills each request. The hooks (``before``,
``follows_usage``, ``ttl_for``) let an arm send requests of its own or ask
another TTL (``bench/keepalive.py``).

A follower (``follow``) is an arm that sends what its leader (the unmodified
arm) sends until its first cut: while its cuts change nothing, its cache would
hold exactly the leader's entries, so it takes the leader's bill of each
request instead of billing it again. Its cuts of request k are found
(``prepare``) before the leader bills k; the first that changes a unit hands
it a copy of the leader's state as it stood before k, and it bills on its own
from there. The same bills either way (tests/bench/test_arm.py); most of a
stage arm's requests precede its first cut.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from itertools import accumulate

from scalpel_desktop.accounting.cache_model import TTL_SECONDS, Block, Entry, PromptCache, min_cacheable_for
from scalpel_desktop.bench.reader import Request
from scalpel_desktop.wire.usage import Usage


@dataclass
class RequestBill:
    real: Usage
    sim: Usage
    real_cost: float
    sim_cost: float
    tokens: int  # simulated prompt tokens
    read_at: int  # the unit boundary the real read stopped at


@dataclass
class SequenceBill:
    name: str
    model: str
    requests: list[RequestBill] = field(default_factory=list)
    extra_cost: float = 0.0  # requests an arm sent that the session did not (keep-alive pings)
    extra_requests: int = 0

    @property
    def real_cost(self) -> float:
        return sum(r.real_cost for r in self.requests)

    @property
    def sim_cost(self) -> float:
        return sum(r.sim_cost for r in self.requests) + self.extra_cost


class _Chain:
    """The blocks of an arm's current request, each ``chain`` naming its whole prefix.

    A chain is interned per sequence (``ids``, shared by its arms): (the previous
    unit's chain, this unit's key, the role of the message it opens) -> a number. So
    two prefixes have one chain exactly when they are the same units, as when the
    chain hashed them (``PrefixBuilder.add_raw``, what this replaced), at a dict
    look-up per unit instead of a hash of the unit's key."""

    __slots__ = ("blocks", "ids")

    def __init__(self, ids: dict, blocks: list | None = None):
        self.ids = ids
        self.blocks: list[Block] = blocks if blocks is not None else []

    def copy(self) -> "_Chain":
        return _Chain(self.ids, list(self.blocks))

    def add(self, key: tuple, tokens: int, new_role: str | None) -> None:
        blocks = self.blocks
        link = (blocks[-1].chain if blocks else -1, key, new_role)
        chain = self.ids.get(link)
        if chain is None:
            chain = self.ids[link] = len(self.ids)
        blocks.append(Block(chain, tokens))


class _Units:
    """The unit list of the current request, kept in step with its chain."""

    def __init__(self, ids: dict | None = None) -> None:
        self.keys: list[tuple] = []
        self.tokens: list[int] = []
        self.pb = _Chain(ids if ids is not None else {})

    def sync(self, keys: list[tuple], roles: list[str], tokens: list[int]) -> None:
        mine = self.keys
        m = len(mine)
        if keys is mine and tokens is self.tokens:
            return
        if len(keys) >= m and keys[:m] == mine:
            i = m  # the usual case: the request appends to the previous one
        else:
            n = min(len(keys), m)
            i = 0
            while i < n and mine[i] == keys[i]:
                i += 1
        if i < m:  # something earlier changed: the chain as it was after unit i - 1, then on from there
            self.pb = self.pb.copy()
            del self.pb.blocks[i:]
        blocks = self.pb.blocks
        if i and tokens[:i] != self.tokens[:i]:  # same identity, other tokens (a free cut)
            for j in range(i):
                if blocks[j].tokens != tokens[j]:
                    blocks[j] = replace(blocks[j], tokens=tokens[j])
        add = self.pb.add
        for j in range(i, len(keys)):
            add(keys[j], tokens[j], roles[j] if j == 0 or roles[j] != roles[j - 1] else None)
        self.keys, self.tokens = keys, tokens


class Arm:
    """One policy's pass over a sequence: its own cache, billed request by request."""

    def __init__(self, sim, cuts_for, free: bool, after):
        self.sim, self.cuts_for, self.free, self.after = sim, cuts_for, free, after
        self.cache = PromptCache()
        self.units = _Units(sim.chain_ids)
        self.bill = SequenceBill(sim.seq.name, sim.model)
        self.ttl = "1h" if sim.seq.requests[0].usage.cache_write_1h > 0 else "5m"
        self.own: set = set()  # chains this arm wrote (or was granted) itself
        self._reach: dict = {}  # cache key -> the most tokens any entry of it may hold
        self.leader: Arm | None = None  # while following: the arm whose bills this one takes
        # {unit: ttl} of the markers a stage added to request k's body (its pin), {unit: None} for a
        # client marker the pin took (moved): billed as sent
        self.pins_for: Callable[[int], dict[int, str | None]] | None = None
        self._prepared: tuple | None = None  # (k, cuts, cut_units) found by prepare()

    # a follower (see the module docstring)
    def follow(self, leader: "Arm") -> None:
        """Take ``leader``'s bills while this arm's cuts change nothing; call ``prepare(k)``
        before the leader's ``step(k)``, this arm's ``step(k)`` after it."""
        if type(self) is not Arm or type(leader) is not Arm or leader.cuts_for is not None or self.bill.requests:
            raise ValueError("only a fresh plain arm follows, and only the unmodified arm leads")
        self.leader = leader

    def prepare(self, k: int) -> None:
        """This arm's cuts of request ``k`` (before its leader bills ``k``); a cut that changes
        what it sends ends the following, with the leader's state as it is now."""
        sim = self.sim
        req = sim.seq.requests[k]
        cuts = self.cuts_for(k, req) if self.cuts_for else None
        units = sim.cut_units(k, cuts, self.free)
        self._prepared = (k, cuts, units)
        lead = self.leader
        if lead is None:
            return
        if len(lead.bill.requests) != k:
            raise RuntimeError("a follower's cuts are found before its leader bills the request")
        base = sim._bases[k]
        if units[0] is not base[0] or units[2] is not base[2]:
            self._take_state(lead)

    def _take_state(self, lead: "Arm") -> None:
        """Become an arm of its own, with ``lead``'s cache, chain and bills as they are."""
        cache = self.cache
        cache.entries = {ek: Entry(e.ttl, e.expires, e.tokens) for ek, e in lead.cache.entries.items()}
        cache._bills = lead.cache._bills
        u, lu = self.units, lead.units
        u.keys, u.tokens, u.pb = lu.keys, lu.tokens, lu.pb.copy()
        self.own, self._reach, self.ttl = set(lead.own), dict(lead._reach), lead.ttl
        if hasattr(lead, "roles"):
            self.roles = lead.roles
        self.bill.requests = list(lead.bill.requests)
        self.leader = None

    # hooks for an arm that also sends requests of its own, or asks another TTL (bench/keepalive.py)
    def before(self, k: int, req: Request) -> None:
        """Called before request ``k`` is billed; ``self.units`` still hold request ``k - 1``."""

    def follows_usage(self, k: int, req: Request) -> bool:
        """Does request ``k`` take its read boundary from its real usage (the default)?"""
        return True

    def ttl_for(self, req: Request) -> str:
        return self.sim._ttl(req, self.ttl)

    def step(self, k: int) -> RequestBill:
        sim, cache = self.sim, self.cache
        req = sim.seq.requests[k]
        lead = self.leader
        if lead is not None:  # its cuts of k changed nothing (prepare): the leader's bill is its own
            if self._prepared is None or self._prepared[0] != k or len(lead.bill.requests) != k + 1:
                raise RuntimeError("a follower steps after prepare(k) and its leader's step(k)")
            self._prepared = None
            rb = lead.bill.requests[k]
            self.bill.requests.append(rb)
            if self.after is not None:
                self.after(k, req, rb.sim)
            return rb
        self.before(k, req)
        got = self._prepared
        if got is not None and got[0] == k:
            cuts, (keys, roles, tokens, first) = got[1], got[2]
        else:
            cuts = self.cuts_for(k, req) if self.cuts_for else None
            keys, roles, tokens, first = sim.cut_units(k, cuts, self.free)
        self._prepared = None
        base = sim._bases[k]
        shared = sim._shared
        if shared is not None and shared[0] == k and keys is base[0] and shared[1] is not self.units:
            # no keyed cut: the unmodified arm's chain, already built for this request (free cuts patched)
            pb = shared[1].pb.copy()
            if tokens is not base[2]:
                for pos in {base[3][t] for t in cuts or () if t in base[3]}:
                    pb.blocks[pos] = replace(pb.blocks[pos], tokens=tokens[pos])
            self.units.pb, self.units.keys, self.units.tokens = pb, keys, tokens
        else:
            self.units.sync(keys, roles, tokens)
            if self.cuts_for is None:
                sim._shared = (k, self.units)
        self.ttl = ttl = self.ttl_for(req)
        marks = sim._marks(roles, ttl)
        if self.pins_for is not None:
            added = self.pins_for(k)
            if added:
                marks = {**marks, **added}  # every marker of the body sent, the pin included (None: taken off)
        self.roles = roles
        ck = req.model
        b = sim.read_at[k]
        blocks = self.units.pb.blocks
        cum = sim.cum(k) if tokens is base[2] else list(accumulate(tokens, initial=0))
        at = cum[b]
        follows = self.follows_usage(k, req)
        if follows:
            self._drop_after(ck, at)
        if b > 0 and follows:
            chain = blocks[b - 1].chain
            if self.free or chain in self.own or first >= b:  # its prefix to b is the unmodified one
                e = cache.entries.get((ck, chain))
                if e is None or e.expires <= req.ts:
                    cache.entries[(ck, chain)] = Entry(ttl, req.ts + TTL_SECONDS[ttl], at)
                    self.billed(ck, at)
                self.own.add(chain)
        detail = cache.bill_detail(ck, blocks, req.ts, breakpoints=marks, min_cacheable=min_cacheable_for(req.model),
                                   also_read=b - 1 if b > 0 and follows else None, cum=cum)
        self.billed(ck, cum[-1])
        for i in detail.written:
            self.own.add(blocks[i].chain)
        usage = _clamped(detail.usage)
        usage.output_tokens = req.usage.output_tokens
        rates = sim.prices.rates(req.model)
        rb = RequestBill(req.usage, usage, sim.real_cost(k), rates.cost(usage), cum[-1], b)
        self.bill.requests.append(rb)
        if self.after is not None:
            self.after(k, req, usage)
        return rb

    def billed(self, key, tokens: int) -> None:
        """A bill of ``tokens`` under ``key`` may have written entries up to ``tokens``."""
        if tokens > self._reach.get(key, -1):
            self._reach[key] = tokens

    def _drop_after(self, key, tokens: int) -> None:
        """Forget every entry of ``key`` whose prefix reaches past ``tokens`` (none when no bill
        since the last drop reached that far: ``_reach`` bounds every entry's tokens)."""
        if self._reach.get(key, -1) > tokens:
            _drop_after(self.cache, key, tokens)
            self._reach[key] = tokens


def _clamped(u: Usage) -> Usage:
    """A negative hidden block after the last cached point can leave negative input: move it to the read."""
    if u.input_tokens < 0:
        u = Usage(input_tokens=0, cache_write_5m=u.cache_write_5m, cache_write_1h=u.cache_write_1h,
                  cache_read=max(0, u.cache_read + u.input_tokens))
    return u


def _drop_after(cache: PromptCache, key, tokens: int) -> None:
    """Forget every entry of ``key`` whose prefix reaches past ``tokens``."""
    dead = [ek for ek, e in cache.entries.items() if ek[0] == key and e.tokens > tokens]
    for ek in dead:
        del cache.entries[ek]


