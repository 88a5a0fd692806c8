"""Bill a transcript sequence through the project's one cache model, anchored to its usage.

The bench never prices a policy from this simulator alone: a policy costs the
real bill plus (simulated with the policy - simulated without), so what the
simulator gets wrong the same way in both arms cancels. What it must get right
is what a cut changes, and for that it is anchored to each request's own usage:

* **Tokens.** A content block counts its bytes times the sequence's own
  tokens per byte (``bench/ratio.py``, measured from its usage deltas), so a
  cut removes the tokens its bytes stand for in that sequence. No estimator
  table, no corpus median.
* **What the transcript does not show** (system prompt, tools, reminders,
  attachments, omitted thinking, expanded tool references) is sized from each
  request's real prompt total: the first request's total minus its visible
  content is the prefix; every later request adds one hidden block, after its
  own history, holding what its total has beyond the prefix, its visible
  content and the earlier hidden blocks still in its history. So every
  request's unmodified prompt is its real prompt to the token (a negative
  hidden block is content the client sent shorter than the transcript holds,
  such as thinking the API dropped).
* **Read boundaries from the usage.** Each request's real ``cache_read`` says
  where the provider's read stopped; it is mapped to the unit boundary it
  falls on (the boundaries at the ends of earlier requests are exact, by the
  anchoring). Before billing a request, every arm forgets the entries past
  that boundary (the client or the provider broke the cache there) and, where
  the usage shows a read the cache model alone would not have granted (a
  static system prompt kept warm by other sessions, an entry alive past its
  nominal TTL), holds an entry at the boundary: in the unmodified arm always,
  in a policy's arm only where its prefix up to there is the unmodified one or
  one it wrote itself. Then the cache model bills (read, writes at Claude
  Code's breakpoints, lookback, minimum cacheable size, TTL per request).
* **The static system prefix** is split off where real reads stop inside the
  prefix (Claude Code's first system breakpoint): it stays warm across
  sessions and idle gaps exactly where the usage shows it did.

Incremental: a unit is identified by where its content lives in the transcript
(file line, block index, and the stub that replaced it, if any), so hashing a
unit is O(1) and a request only hashes the units it adds.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from itertools import accumulate

from scalpel_desktop.wire.usage import Usage
from scalpel_desktop.bench.arm import Arm, RequestBill, SequenceBill
from scalpel_desktop.bench.client_markers import layout_for
from scalpel_desktop.bench.ratio import ByteCounter, Ratio, measure
from scalpel_desktop.bench.reader import Line, Request, Sequence


@dataclass(frozen=True)
class Stub:
    """What a cut result's content became: its identity and tokens."""

    key: str
    tokens: int


# cumulative cut map for one request: tool_use_id -> Stub
Cuts = Mapping[str, Stub]


class SequenceSimulator:
    """Bills one sequence; call :meth:`run` once per arm (fresh cache each time)."""

    def __init__(self, seq: Sequence, prices, *, counter: ByteCounter | None = None, pooled: Ratio | None = None):
        self.seq = seq
        self.prices = prices
        self.model = seq.requests[0].model
        self.counter = counter or ByteCounter()
        self.ratio = measure(seq, self.counter, pooled)
        self._tok: dict[int, list[int]] = {}
        first = seq.requests[0]
        raw_prefix = first.usage.prompt_tokens - sum(self._line_tokens(ln) for ln in first.history)
        self.prefix_tokens = max(0, raw_prefix)
        self.two_message_marks = layout_for(first.version).previous_message  # (bench/client_markers.py)
        self.splits, self.static_tokens = self._prefix_splits()
        self._prefix_units = self._prefix()
        self._bases: list[tuple] = []
        self.hidden: list[int] = []  # hidden tokens per request (0 for the first: it sized the prefix)
        self._build()
        self.read_at = [self._boundary(k) for k in range(len(seq.requests))]
        self._shared: tuple | None = None  # (k, the unmodified arm's units after request k)
        self._cums: dict[int, list[int]] = {}
        self._real: dict[int, float] = {}
        self.chain_ids: dict = {}  # the arms' unit chains, interned (bench/arm.py)

    # -- tokens ---------------------------------------------------------
    def _block_tokens(self, ln: Line) -> list[int]:
        got = self._tok.get(id(ln))
        if got is None:
            got = self._tok[id(ln)] = [self.ratio.tokens(b) for b in self.counter.blocks(ln)]
        return got

    def _line_tokens(self, ln: Line) -> int:
        return sum(self._block_tokens(ln))

    def stub_tokens(self, nbytes: int) -> int:
        return max(1, self.ratio.tokens(nbytes))

    def _prefix_splits(self) -> tuple[list[int], int]:
        """Every point inside the prefix where a real read stopped, and the most frequent one
        (Claude Code's first system breakpoint, the end of its static part)."""
        counts: dict[int, int] = {}
        for req in self.seq.requests:
            r = req.usage.cache_read
            if 0 < r < self.prefix_tokens:
                counts[r] = counts.get(r, 0) + 1
        if not counts:
            return [], 0
        return sorted(counts), max(counts, key=lambda r: (counts[r], r))

    # -- units ------------------------------------------------------------
    def _build(self) -> None:
        """Every request's uncut units, with its hidden block sized from its real total.

        Request k's hidden block sits where its new content starts (right after the
        previous request's history, which it extends), so every point after it - its
        breakpoints included - is priced with it; after a compaction or a rewind, at
        its end."""
        reqs = self.seq.requests
        anchored: dict[object, list[int]] = {}  # id(line) or "prefix" -> hidden blocks after it
        for k, req in enumerate(reqs):
            hist = req.history
            start = 0
            own = -1
            if k > 0:
                ph = reqs[k - 1].history
                extends = len(ph) <= len(hist) and all(a is b for a, b in zip(ph, hist))
                anchor: object = (id(ph[-1]) if ph else "prefix") if extends else (id(hist[-1]) if hist else "prefix")
                anchored.setdefault(anchor, []).append(k)
            else:
                extends = False
            if extends:  # the previous request's units, this one's hidden block, then the new lines
                pk, pr, pt, pres = self._bases[k - 1]
                keys, roles, tokens, results = list(pk), list(pr), list(pt), dict(pres)
                own = len(keys)
                keys.append(("hidden", k))
                roles.append("user")
                tokens.append(0)
                start = len(ph)
            else:
                keys, roles, tokens = (list(x) for x in self._prefix_units)
                results = {}
            for pos in range(start - 1 if not extends else start, len(hist)):
                if pos >= 0:
                    ln = hist[pos]
                    bt = self._block_tokens(ln)
                    for bi, b in enumerate(ln.blocks):
                        if b.get("type") == "tool_result":
                            tid = b.get("tool_use_id")
                            if isinstance(tid, str):
                                results[tid] = len(keys)
                        keys.append((ln.index, bi))
                        tokens.append(bt[bi])
                        roles.append(ln.role)
                for j in anchored.get(id(hist[pos]) if pos >= 0 else "prefix", ()):
                    if j >= k and extends:
                        break
                    if j > k:
                        break
                    if j == k:
                        own = len(keys)
                    keys.append(("hidden", j))
                    roles.append("user")
                    tokens.append(self.hidden[j] if j < k else 0)
            if own >= 0:
                h = req.usage.prompt_tokens - sum(tokens)
                tokens[own] = h
                self.hidden.append(h)
            else:
                self.hidden.append(0)
            self._bases.append((keys, roles, tokens, results))

    def _prefix(self) -> tuple[list, list, list]:
        points = self.splits + [self.prefix_tokens]
        keys = [("prefix", p) for p in points]
        tokens = [b - a for a, b in zip([0] + points, points)]
        return keys, ["system"] * len(points), tokens

    def units(self, k: int, cuts: Cuts | None, free: bool = False):
        """Keys, roles and tokens of request ``k``'s prompt (after ``cuts``).

        ``free``: the cut changes the tokens but not the identity (the ceiling:
        a dead token removed without touching the cache). The uncut lists are
        shared (never mutated); a cut copies them and patches the cut positions."""
        return self.cut_units(k, cuts, free)[:3]

    def cut_units(self, k: int, cuts: Cuts | None, free: bool = False):
        """``units`` and the first unit whose identity the cuts changed (``len(keys)``: none)."""
        keys, roles, tokens, results = self._bases[k]
        if not cuts:
            return keys, roles, tokens, len(keys)
        hits = [(results[t], stub) for t, stub in cuts.items() if t in results]
        if not hits:
            return keys, roles, tokens, len(keys)
        keys = list(keys)
        tokens = list(tokens)
        first = len(keys)
        for pos, stub in hits:
            if not free:
                keys[pos] = keys[pos] + (stub.key,)
                first = min(first, pos)
            tokens[pos] = stub.tokens
        return keys, roles, tokens, first

    def cum(self, k: int) -> list[int]:
        """Running token sums of request ``k``'s uncut units (``cum[i]``: tokens before unit i),
        for every arm that sends them uncut."""
        got = self._cums.get(k)
        if got is None:
            got = self._cums[k] = list(accumulate(self._bases[k][2], initial=0))
            self._cums.pop(k - 2, None)  # the arms step in lockstep
        return got

    def real_cost(self, k: int) -> float:
        """Request ``k``'s real usage at list prices (the same for every arm)."""
        got = self._real.get(k)
        if got is None:
            req = self.seq.requests[k]
            got = self._real[k] = self.prices.rates(req.model).cost(req.usage)
        return got

    def message_start_unit(self, k: int, message: int) -> int | None:
        """The unit where message ``message`` of request ``k``'s body starts (its first block)."""
        lines = self._message_lines(k, message)
        return self._unit_of(k, (lines[0].index, 0)) if lines else None

    def message_end_unit(self, k: int, message: int) -> int | None:
        """The unit of the last block of message ``message`` of request ``k``'s body, where a
        marker there sits; None when it has no such block."""
        lines = self._message_lines(k, message)
        return self._unit_of(k, (lines[-1].index, len(lines[-1].blocks) - 1)) if lines else None

    def _message_lines(self, k: int, message: int) -> list[Line]:
        """The lines (with blocks) of message ``message`` of request ``k``'s body: its consecutive
        same-role lines merged into one message, as ``SequenceBodies`` sends them."""
        m, prev, out = -1, None, []
        for ln in self.seq.requests[k].history:
            if ln.role != prev:
                m, prev = m + 1, ln.role
                if m > message:
                    break
            if m == message and ln.blocks:
                out.append(ln)
        return out

    def _unit_of(self, k: int, key: tuple) -> int | None:
        try:
            return self._bases[k][0].index(key)
        except ValueError:
            return None

    def result_units(self, k: int) -> dict[str, int]:
        return self._bases[k][3]

    def _boundary(self, k: int) -> int:
        """The unit boundary (units before it) where request ``k``'s real read stopped."""
        tokens = self._bases[k][2]
        read = self.seq.requests[k].usage.cache_read
        if read <= 0:
            return 0
        best, best_d, cum = 0, read, 0
        for i, t in enumerate(tokens):
            cum += t
            d = abs(cum - read)
            if d < best_d or (d == best_d and cum <= read):
                best, best_d = i + 1, d
            if cum > read + best_d:
                break
        return best

    # -- billing ----------------------------------------------------------
    @staticmethod
    def _ttl(req: Request, prev: str) -> str:
        u = req.usage
        if u.cache_write_1h > 0:
            return "1h"
        if u.cache_write_5m > 0:
            return "5m"
        return prev

    def _marks(self, roles: list[str], ttl: str) -> dict[int, str]:
        last = len(roles) - 1
        np = len(self._prefix_units[0])
        marks = {np - 1: ttl, last: ttl}
        if self.static_tokens:
            marks[self.splits.index(self.static_tokens)] = ttl
        prev_end = self._previous_end(roles)
        if prev_end is not None:
            marks[prev_end] = ttl
        return marks

    def _previous_end(self, roles: list[str]) -> int | None:
        """The unit of the client's marker on the message before the last (the pre-2.1 layout), else None."""
        if not self.two_message_marks:
            return None
        last = len(roles) - 1
        j = last
        while j > 0 and roles[j] == roles[last] and roles[j] != "system":
            j -= 1
        r = roles[j]
        while j > 0 and roles[j - 1] == r:
            j -= 1
        prev_end = j
        while prev_end + 1 < len(roles) and roles[prev_end + 1] == r:
            prev_end += 1
        return prev_end if 0 < prev_end < last else None

    def sent_marks(self, k: int, doc: dict, pin: int, ttl: str) -> dict[int, str | None]:
        """The markers a pinned body ``doc`` of request ``k`` carries beyond the client's own rule:
        {unit: ttl} of the pin on message ``pin``, and {unit: None} where the client's marker on the
        message before the last went to the pin (``surgery/pin.py``: moved, so not billed there)."""
        from scalpel_desktop.surgery.pin import marker_ttls

        unit = self.message_end_unit(k, pin)
        if unit is None:
            return {}
        sent = {pos[1]: t for pos, t in marker_ttls(doc) if pos[0] == 2}
        marks: dict[int, str | None] = {unit: sent.get(pin) or ttl}
        prev = self._previous_end(self._bases[k][1])
        n = len(doc.get("messages") or [])
        if prev is not None and n >= 2 and n - 2 not in sent:
            marks[prev] = None
        return marks

    def run(self, cuts_for: Callable[[int, Request], Cuts | None] | None = None, *, free: bool = False,
            after: Callable[[int, Request, Usage], None] | None = None) -> SequenceBill:
        """Bill every request. ``cuts_for(k, request)`` gives the cumulative cut map of
        request k; ``after(k, request, usage)`` hears the simulated bill (a policy's
        economist learns from it)."""
        arm = self.arm(cuts_for, free=free, after=after)
        for k in range(len(self.seq.requests)):
            arm.step(k)
        return arm.bill

    def arm(self, cuts_for: Callable[[int, Request], Cuts | None] | None = None, *, free: bool = False,
            after: Callable[[int, Request, Usage], None] | None = None, kind: type | None = None,
            **opts) -> Arm:
        """One arm to step request by request (several arms of a sequence go in lockstep);
        ``kind``: an ``Arm`` subclass (``opts`` go to it)."""
        return (kind or Arm)(self, cuts_for, free, after, **opts)


__all__ = ["Arm", "Cuts", "RequestBill", "SequenceBill", "SequenceSimulator", "Stub"]
