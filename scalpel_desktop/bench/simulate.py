"""Bill a transcript sequence through the project's one cache model.

Every request of a :class:`~scalpel_desktop.bench.reader.Sequence` becomes a
list of :class:`~scalpel_desktop.accounting.cache_model.Block` s billed by
:class:`~scalpel_desktop.accounting.cache_model.PromptCache` (the same model
the emulated upstream uses), with

* tokens from the calibrated estimator (``accounting/estimator.py``), not the
  emulator's bytes/4 rule, because the figures are compared with real bills;
* one block standing for the system prompt and tool declarations, which
  transcripts do not hold: its size is INFERRED from the first request's
  usage (its prompt total minus the estimate of its history);
* one "hidden" block per later request: what Claude Code adds to a turn
  without writing it to the transcript (system reminders), at the calibrated
  tokens per turn of the model's tokenizer generation;
* Claude Code's breakpoints: the end of the system prompt, the last block of
  the last message, and (before 2.1) of the message before it;
* the TTL: in ``check`` mode from the first request's usage only (1h writes
  seen -> 1h), in ``replay`` mode from each request's own usage (a request
  that wrote nothing keeps the previous one's TTL).

Incremental: a block is identified by where its content lives in the
transcript (file line, block index, and the stub that replaced it, if any),
which is unique because transcript lines never change, so hashing a block is
O(1) and a request only hashes the blocks it adds; the chain is rebuilt from
the first changed block only when a cut or a rewound branch changes an
earlier one.

Breaks (``replay`` mode): where a request's REAL usage shows the cache read
stopping well before what the replay read, the client or provider broke the
cache there (the transcript does not show what the client re-wrote): the
baseline pass records that point as a unit index and every policy's pass
drops the cache entries past it before billing that request. ``check`` mode
never looks at usage after the first request.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping

from scalpel_desktop.accounting.cache_model import PrefixBuilder, PromptCache, min_cacheable_for
from scalpel_desktop.accounting.estimator import estimate_block, hidden_per_turn, model_family
from scalpel_desktop.wire.usage import Usage
from scalpel_desktop.bench.reader import Line, Request, Sequence

# A real read this far (in simulated tokens) short of the replayed read is a break.
BREAK_TOLERANCE_TOKENS = 256
BREAK_TOLERANCE_SHARE = 0.03


@dataclass(frozen=True)
class Stub:
    """What a cut result's content became: its identity and estimated tokens."""

    key: str
    tokens: int


# cumulative cut map for one request: tool_use_id -> Stub
Cuts = Mapping[str, Stub]


@dataclass
class RequestBill:
    real: Usage
    sim: Usage
    real_cost: float
    sim_cost: float
    tokens: int  # simulated prompt tokens
    broke_at: int | None = None  # unit index of a break taken from the real usage


@dataclass
class SequenceBill:
    name: str
    model: str
    prefix_tokens: int  # inferred system + tools size
    prefix_negative: bool  # the first request's usage was SMALLER than its estimated history
    ttl: str
    requests: list[RequestBill] = field(default_factory=list)
    breaks: list[int | None] = field(default_factory=list)

    @property
    def real_cost(self) -> float:
        return sum(r.real_cost for r in self.requests)

    @property
    def sim_cost(self) -> float:
        return sum(r.sim_cost for r in self.requests)

    @property
    def breaks_used(self) -> int:
        return sum(1 for b in self.breaks if b is not None)


class _Units:
    """The block list of the current request, kept in step with a PrefixBuilder."""

    def __init__(self) -> None:
        self.keys: list[tuple] = []
        self.roles: list[str] = []
        self.tokens: list[int] = []
        self.pb = PrefixBuilder()

    def sync(self, keys: list[tuple], roles: list[str], tokens: list[int]) -> None:
        mine = self.keys
        m = len(mine)
        if keys is mine and tokens is self.tokens:
            return
        if len(keys) >= m and keys[:m] == mine and tokens[:m] == self.tokens:
            i = m  # the usual case: the request appends to the previous one
        else:
            n = min(len(keys), m)
            i = 0
            while i < n and mine[i] == keys[i] and self.tokens[i] == tokens[i]:
                i += 1
        if i < len(self.keys):  # something earlier changed: rebuild the chain up to i
            pb = PrefixBuilder()
            for j in range(i):
                self._add(pb, j, keys, roles, tokens)
            self.pb = pb
        for j in range(i, len(keys)):
            self._add(self.pb, j, keys, roles, tokens)
        self.keys, self.roles, self.tokens = keys, roles, tokens

    @staticmethod
    def _add(pb: PrefixBuilder, j: int, keys, roles, tokens) -> None:
        new_role = roles[j] if j == 0 or roles[j] != roles[j - 1] else None
        pb.add_raw(repr(keys[j]).encode(), tokens[j], None, new_message_role=new_role)


class SequenceSimulator:
    """Bills one sequence; call :meth:`run` once per policy (fresh cache each time)."""

    def __init__(self, seq: Sequence, prices, *, mode: str = "check"):
        if mode not in ("check", "replay"):
            raise ValueError("mode is 'check' or 'replay'")
        self.seq = seq
        self.prices = prices
        self.mode = mode
        first = seq.requests[0]
        self.model = first.model
        self.family = model_family(first.model)
        self.hidden = int(round(hidden_per_turn(self.family)))
        self._tok_cache: dict[tuple[int, int], int] = {}
        self._bases: dict[int, tuple] = {}  # uncut unit lists per request, shared by every run
        hist_tokens = sum(self._line_tokens(ln) for ln in first.history)
        raw_prefix = first.usage.prompt_tokens - hist_tokens
        self.prefix_tokens = max(0, raw_prefix)
        self.prefix_negative = raw_prefix < 0
        self.first_ttl = "1h" if first.usage.cache_write_1h > 0 else "5m"
        self.two_message_marks = _older_than(first.version, (2, 1))
        # Claude Code marks two points in its system prompt: the end of the static part
        # (tools + fixed instructions) and the end of the dynamic part (environment, git
        # status, CLAUDE.md). Replay splits the inferred prefix where real reads show the
        # static part ended; without such evidence (and always in check mode) it is one block.
        self.static_tokens = self._static_split() if mode == "replay" else 0

    def _static_split(self) -> int:
        """The static prefix size: the most frequent real read that stops inside the prefix."""
        counts: dict[int, int] = {}
        for req in self.seq.requests[1:]:
            r = req.usage.cache_read
            if 0 < r < self.prefix_tokens - BREAK_TOLERANCE_TOKENS:
                counts[r] = counts.get(r, 0) + 1
        if not counts:
            return 0
        return max(counts, key=lambda r: (counts[r], r))

    # -- tokens ---------------------------------------------------------
    def _block_tokens(self, ln: Line, bi: int) -> int:
        k = (id(ln), bi)
        t = self._tok_cache.get(k)
        if t is None:
            t = self._tok_cache[k] = estimate_block(ln.blocks[bi], self.family)
        return t

    def _line_tokens(self, ln: Line) -> int:
        return sum(self._block_tokens(ln, i) for i in range(len(ln.blocks)))

    # -- units ------------------------------------------------------------
    def units(self, k: int, cuts: Cuts | None, free: bool = False):
        """Keys, roles and tokens of request ``k``'s prompt (after ``cuts``).

        ``free``: the cut changes the tokens but not the identity (the ceiling:
        a dead token removed without touching the cache). The uncut lists are
        built once per request and shared (never mutated); a cut copies them and
        patches only the cut positions."""
        keys, roles, tokens, results = self._base(k)
        if not cuts:
            return keys, roles, tokens
        hits = [(results[t], stub) for t, stub in cuts.items() if t in results]
        if not hits:
            return keys, roles, tokens
        keys = list(keys)
        tokens = list(tokens)
        for pos, stub in hits:
            if not free:
                keys[pos] = keys[pos] + (stub.key,)
            tokens[pos] = stub.tokens
        return keys, roles, tokens

    def _base(self, k: int):
        got = self._bases.get(k)
        if got is not None:
            return got
        req = self.seq.requests[k]
        if self.static_tokens:
            keys: list[tuple] = [("static",), ("prefix",)]
            roles = ["system", "system"]
            tokens = [self.static_tokens, self.prefix_tokens - self.static_tokens]
        else:
            keys = [("prefix",)]
            roles = ["system"]
            tokens = [self.prefix_tokens]
        results: dict[str, int] = {}
        hidden_after = self._hidden_positions(k)
        for pos, ln in enumerate(req.history):
            for bi, b in enumerate(ln.blocks):
                if b.get("type") == "tool_result":
                    tid = b.get("tool_use_id")
                    if isinstance(tid, str):
                        results[tid] = len(keys)
                keys.append((ln.index, bi))
                tokens.append(self._block_tokens(ln, bi))
                roles.append(ln.role)
            h = hidden_after.get(pos)
            if h is not None:
                keys.append(("hidden", h))
                roles.append("user")
                tokens.append(self.hidden)
        got = self._bases[k] = (keys, roles, tokens, results)
        return got

    def _hidden_positions(self, k: int) -> dict[int, str]:
        """After which history position each earlier request's hidden block sits."""
        out: dict[int, str] = {}
        if not self.hidden:
            return out
        reqs = self.seq.requests
        hist = reqs[k].history
        where = {id(ln): i for i, ln in enumerate(hist)}
        for j in range(1, k + 1):
            h = reqs[j].history
            if h:
                i = where.get(id(h[-1]))
                if i is not None:
                    out[i] = reqs[j].request_id
        return out

    # -- billing ----------------------------------------------------------
    def _ttl(self, k: int, prev: str) -> str:
        if self.mode == "check":
            return self.first_ttl
        u = self.seq.requests[k].usage
        if u.cache_write_1h > 0:
            return "1h"
        if u.cache_write_5m > 0:
            return "5m"
        return prev

    def _marks(self, roles: list[str], ttl: str) -> dict[int, str]:
        last = len(roles) - 1
        marks = {0: ttl, last: ttl}
        if self.static_tokens:
            marks[1] = ttl
        if self.two_message_marks:
            j = last
            while j > 0 and roles[j] == roles[last] and roles[j] != "system":
                j -= 1
            r = roles[j]
            while j > 0 and roles[j - 1] == r:
                j -= 1
            # j is the first block of the previous message; its last block is before the last message
            prev_end = j
            while prev_end + 1 < len(roles) and roles[prev_end + 1] == r:
                prev_end += 1
            if 0 < prev_end < last:
                marks[prev_end] = ttl
        return marks

    def run(self, cuts_for: Callable[[int, Request], Cuts | None] | None = None, *,
            breaks: list[int | None] | None = None, detect_breaks: bool = False,
            free: bool = False, after: Callable[[int, Request, Usage], None] | None = None) -> SequenceBill:
        """Bill every request. ``cuts_for(k, request)`` gives the cumulative cut map of
        request k; ``after(k, request, usage)`` hears the simulated bill (a policy's
        economist learns from it); ``breaks`` (from a baseline run with
        ``detect_breaks``) replays the client's own cache breaks."""
        seq = self.seq
        cache = PromptCache()
        units = _Units()
        bill = SequenceBill(seq.name, self.model, self.prefix_tokens, self.prefix_negative, self.first_ttl)
        ttl = self.first_ttl
        prev_sim_total = prev_real_total = 0
        for k, req in enumerate(seq.requests):
            cuts = cuts_for(k, req) if cuts_for else None
            keys, roles, tokens = self.units(k, cuts, free)
            units.sync(keys, roles, tokens)
            ttl = self._ttl(k, ttl)
            marks = self._marks(roles, ttl)
            floor = min_cacheable_for(req.model)
            ck = req.model
            broke = breaks[k] if breaks is not None and k < len(breaks) else None
            if broke is not None:
                _drop_after(cache, ck, sum(tokens[:broke]))
            detail = cache.bill_detail(ck, units.pb.blocks, req.ts, breakpoints=marks, min_cacheable=floor)
            sim = detail.usage
            if detect_breaks and k > 0 and broke is None:
                broke = self._find_break(req, sim, tokens, prev_sim_total, prev_real_total)
                if broke is not None:
                    # undo this bill's effect is not needed: drop what lies past the break and bill again
                    _drop_after(cache, ck, sum(tokens[:broke]))
                    sim = cache.bill_detail(ck, units.pb.blocks, req.ts, breakpoints=marks, min_cacheable=floor).usage
            sim.output_tokens = req.usage.output_tokens
            rates = self.prices.rates(req.model)
            real_cost = rates.cost(req.usage)
            if k == 0 and not cuts:
                # The first request IS the calibration point (its usage sized the prefix);
                # what it read came from outside this sequence (an earlier session, a sibling).
                sim_cost = real_cost
                sim = Usage(**req.usage.as_dict())
            else:
                sim_cost = rates.cost(sim)
            prev_sim_total, prev_real_total = sum(tokens), req.usage.prompt_tokens
            bill.requests.append(RequestBill(req.usage, sim, real_cost, sim_cost, prev_sim_total, broke))
            bill.breaks.append(broke)
            if after is not None:
                after(k, req, sim)
        return bill

    def _find_break(self, req: Request, sim: Usage, tokens: list[int], prev_sim: int, prev_real: int) -> int | None:
        """The unit where the real cache read stopped, when it stopped short of the replay's.

        The real read lies within what the previous request sent, so it is mapped
        to simulated tokens by the previous request's real/simulated ratio."""
        real_read = req.usage.cache_read
        if prev_real <= 0 or prev_sim <= 0:
            return None
        pos = real_read * prev_sim / prev_real
        if real_read >= prev_real - BREAK_TOLERANCE_TOKENS:
            pos = max(pos, float(prev_sim))
        tol = max(BREAK_TOLERANCE_TOKENS, BREAK_TOLERANCE_SHARE * prev_sim)
        if pos >= sim.cache_read - tol:
            return None
        cum = 0
        for i, t in enumerate(tokens):
            if cum + t > pos + tol:
                return i
            cum += t
        return len(tokens)


def _drop_after(cache: PromptCache, key, tokens: int) -> None:
    """Forget every entry of ``key`` whose prefix reaches past ``tokens``."""
    dead = [ek for ek, e in cache.entries.items() if ek[0] == key and e.tokens > tokens]
    for ek in dead:
        del cache.entries[ek]


def _older_than(version: str, ref: tuple[int, int]) -> bool:
    try:
        parts = tuple(int(x) for x in version.split(".")[:2])
    except ValueError:
        return False
    return parts < ref if len(parts) == 2 else False


__all__ = ["SequenceSimulator", "SequenceBill", "RequestBill", "Stub", "Cuts"]
