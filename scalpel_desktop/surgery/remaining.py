"""How long a warm cut keeps earning: the remaining turns, from the user's own history.

A cut on a warm cache pays its rewrite once and then saves its tokens at the
cache-read price on every later request - but only until the first of:

* **the session's end**: how many more requests a conversation that has lasted
  ``T`` requests gets, read from the user's own ledger (the lengths of their
  past conversations longer than ``T``); on a fresh install, a Lindy prior
  (a conversation that lasted ``T`` lasts another ``t`` with probability
  ``T / (T + t)``, the scale-free prior for a lifetime whose scale is
  unknown);
* **the next TTL break**: at the next idle gap past the TTL the cut would have
  been free anyway; the chance that a gap is that long comes from the user's
  own gaps (the ledger), else from this conversation's own breaks so far;
* **the next compaction**: Claude Code compacts before the context fills its
  window (``accounting/windows.py``), and a compaction rewrites everything;
  the turns left until the window is full, at this conversation's own growth
  per turn, bound it from above.

Each bound is the number of turns reached with probability at least ``q``,
where ``q = f / (f + 1)`` for the payback factor ``f``: a cut is made when its
saving over the estimate repays its rewrite ``f`` times, so if the session
lasts that long (probability >= q) it gains at least ``(f - 1) x``, and if not
it loses at most ``x``: the worst-case expectation ``q (f - 1) - (1 - q) = (f^2
- f - 1) / (f + 1)`` is positive for the default ``f = 2`` (one third of the
rewrite). No constant here was fitted on any corpus: ``q`` follows from ``f``
(a setting), the sample size needed from ``q``, the rest is the user's data.

Pure: the history is read from the ledger off the request path
(``store/ledger_queries.conversation_history``) and handed in.
"""

from __future__ import annotations

import logging
import math
from bisect import bisect_right
from dataclasses import dataclass
from typing import Any, Sequence

from scalpel_desktop.accounting.windows import context_window
from scalpel_desktop.store.budget_ledger import bets, risk_budget, ttl_overruns
from scalpel_desktop.store.ledger_queries import conversation_history
from scalpel_desktop.surgery.budget import RiskBudget

log = logging.getLogger("scalpel.surgery")


@dataclass(frozen=True)
class History:
    """The user's own past conversations (the ledger), sorted ascending."""

    lengths: tuple[int, ...] = ()  # requests per past conversation
    gaps: tuple[float, ...] = ()  # idle seconds from a response's end to the conversation's next request
    # closed bets (warm cuts): (the later requests the economist counted on, those it really earned on)
    bets: tuple[tuple[int, int], ...] = ()
    # (seconds past the TTL, was the entry read?) of requests after gaps past their TTL (surgery/ttl_margin.py)
    overruns: tuple[tuple[float, bool], ...] = ()

    @classmethod
    def of(cls, lengths: Sequence[int] = (), gaps: Sequence[float] = (),
           bets: Sequence[tuple[int, int]] = (), overruns: Sequence[tuple[float, bool]] = ()) -> "History":
        return cls(tuple(sorted(int(x) for x in lengths if x > 0)), tuple(sorted(float(g) for g in gaps if g >= 0)),
                   tuple((int(e), int(t)) for e, t in bets if e > 0), tuple((float(o), bool(a)) for o, a in overruns))


@dataclass(frozen=True)
class Horizon:
    turns: int  # requests a cut made now surely (with probability >= q) keeps saving on
    bound: str  # session-end | ttl-break | compaction | cap
    session_turns: int
    session_source: str  # ledger | prior
    ttl_turns: int | None
    ttl_source: str  # ledger | conversation | none
    compaction_turns: int | None
    q: float
    learned: float = 1.0  # the share of an estimate the user's own closed bets say is reached (``learned_share``)
    bets_seen: int = 0

    def figures(self) -> dict[str, Any]:
        return {"turns_est": self.turns, "turns_bound": self.bound, "turns_session": self.session_turns,
                "turns_source": self.session_source, "turns_ttl": self.ttl_turns, "ttl_source": self.ttl_source,
                "turns_compaction": self.compaction_turns, "survival_q": round(self.q, 4),
                "turns_learned": round(self.learned, 4), "bets_seen": self.bets_seen}


def learned_share(history: History | None, q: float) -> tuple[float, int]:
    """(share, bets): the part of its estimate a bet reaches with probability >= q, from the
    user's own closed bets (``History.bets``): the (1 - q) quantile of realized / estimated,
    at most 1. Until ``min_sample(q)`` bets have closed, 1 (the estimate as the bounds give it).

    The bounds above are each reached with probability >= q if their inputs are right; the
    horizon also misses for causes they do not see (a read that stops short, a compaction
    sooner than the window). Scaling by this quantile makes the estimate reached by a share q
    of the user's own past bets, whatever the cause."""
    bets = history.bets if history else ()
    if len(bets) < min_sample(q):
        return 1.0, len(bets)
    ratios = sorted(min(1.0, t / e) for e, t in bets)
    return ratios[int(math.floor((1.0 - q) * len(ratios)))], len(bets)


def survival_q(factor: float) -> float:
    """The probability each bound is reached with: ``f / (f + 1)`` (see the module docstring)."""
    f = max(1.0, float(factor))
    return f / (f + 1.0)


def min_sample(q: float) -> int:
    """Past conversations needed before the ledger replaces the prior: the fewest for which
    the empirical ``1 - q`` quantile is not simply the shortest one (``n (1 - q) >= 1``)."""
    return max(1, math.ceil(1.0 / max(1e-9, 1.0 - q) - 1e-9))


def session_turns(history: History | None, so_far: int, q: float) -> tuple[int, str]:
    """More requests this conversation gets with probability >= q, given ``so_far`` requests."""
    longer = [n - so_far for n in (history.lengths if history else ()) if n > so_far]
    if len(longer) >= min_sample(q):
        # the largest r with P(remaining >= r) >= q: the (1 - q) quantile of the remaining lengths
        longer.sort()
        return max(0, longer[int(math.floor((1.0 - q) * len(longer)))] - 1), "ledger"
    # Lindy: P(remaining >= t | so_far) = so_far / (so_far + t) >= q  <=>  t <= so_far (1 - q) / q
    return max(0, int(math.floor(so_far * (1.0 - q) / q))), "prior"


def ttl_turns(history: History | None, conv_turns: int, conv_breaks: int, ttl_s: float, margin: float,
              q: float) -> tuple[int | None, str]:
    """Requests until the next idle gap past the TTL, reached with probability >= q (None: unbounded)."""
    gaps = history.gaps if history else ()
    if len(gaps) >= min_sample(q):
        over = len(gaps) - bisect_right(gaps, ttl_s + margin)
        p, source = over / len(gaps), "ledger"
    elif conv_turns >= min_sample(q):
        p, source = conv_breaks / conv_turns, "conversation"
    else:
        return None, "none"
    if p <= 0:
        return None, source
    if p >= 1:
        return 0, source
    # no break in t requests: (1 - p)^t >= q
    return int(math.floor(math.log(q) / math.log(1.0 - p))), source


def compaction_turns(model: str, tokens_now: int, first_tokens: int, turns: int) -> int | None:
    """Requests until the context would fill the model's window at this conversation's own growth
    per request (None when it has not grown): compaction comes at the latest then."""
    if turns <= 0 or tokens_now <= first_tokens:
        return None
    growth = (tokens_now - first_tokens) / turns
    return max(0, int((context_window(model) - tokens_now) / growth))


def horizon(history: History | None, *, model: str, so_far: int, conv_breaks: int, ttl_s: float,
            margin: float, tokens_now: int, first_tokens: int, factor: float, cap: int) -> Horizon:
    q = survival_q(factor)
    s_turns, s_src = session_turns(history, so_far, q)
    t_turns, t_src = ttl_turns(history, so_far, conv_breaks, ttl_s, margin, q)
    c_turns = compaction_turns(model, tokens_now, first_tokens, so_far)
    bounds = [(s_turns, "session-end"), (max(0, int(cap)), "cap")]
    if t_turns is not None:
        bounds.append((t_turns, "ttl-break"))
    if c_turns is not None:
        bounds.append((c_turns, "compaction"))
    turns, bound = min(bounds, key=lambda b: b[0])
    share, seen = learned_share(history, q)
    if share < 1.0:
        turns = int(math.floor(turns * share))
    return Horizon(turns, bound, s_turns, s_src, t_turns, t_src, c_turns, q, share, seen)


def own_history(conn: Any) -> History | None:
    """The user's past conversations from the ledger, read once at start (never on the request path)."""
    try:
        lengths, gaps = conversation_history(conn)
        outcomes = [(b.turns_est, b.turns) for b in bets(conn) if b.closed]
        seen = ttl_overruns(conn)
    except Exception as e:  # noqa: BLE001 - no history: the warm policies use their prior
        log.warning("could not read the ledger's conversation history: %s", e)
        return None
    return History.of(lengths, gaps, outcomes, seen)


def own_budget(conn: Any) -> RiskBudget:
    """The user's risk budget from the ledger, read once at start (empty when it cannot be read:
    then only free cuts happen until the new ones have saved something)."""
    try:
        saved, staked = risk_budget(conn)
    except Exception as e:  # noqa: BLE001 - an empty budget risks nothing
        log.warning("could not read the ledger's risk budget: %s", e)
        return RiskBudget()
    return RiskBudget(saved, staked)
