"""How far past its TTL a cache may still answer: from the user's own reads after long gaps.

The provider documents the TTL (5 minutes, or 1 hour) as running from the
entry's last use, and a use happens while the request is processed, before
its answer ends. The economist counts from the END of the previous answer
(``ModelState.expires_at``: the latest the clock can have started), so at
``ended + TTL`` the entry is, by the documentation, already gone. What is left
is how late the provider really lets go of it, which it does not document:
real sessions read a 5-minute cache 301.8 s after an answer ended, and missed
at 306.7, 318.1 and 326.5 s (``../shared/corpus/transcripts``).

So the margin is read off the user's own usage counts, not fitted: every
request that follows a gap of ``TTL`` to ``TTL + prior`` seconds says whether
the conversation's entries were alive or not (``wire/cache_rules.overrun``:
alive when its cache read reaches as far as the previous request's own read
did, an entry surely there then). Once ``MIN_OBSERVATIONS`` such requests are
in the ledger, the margin is the largest overrun at which an entry was still
read, plus the clocks' resolution (1 s: the transcripts' and the ledger's
timestamps are milliseconds, the provider's eviction is not; one second keeps
a read at the very edge on the warm side). Before that it is the
``ttl_margin_s`` setting, the prior. A margin too small calls a warm cache
cold (a free cut that re-writes), too large only delays a free cut, so one
entry seen alive later than the margin moves it at once, and the learned
margin never goes above the prior. Reads further past the TTL than the prior
are left out: there a conversation whose previous request read only the
static system prompt (kept warm by other sessions) reads as much again with
its own entries long gone, and would pass for alive.
"""

from __future__ import annotations

from collections.abc import Sequence

from scalpel_desktop.wire.cache_rules import overrun  # noqa: F401 - the observation, one home (re-exported)

MIN_OBSERVATIONS = 3  # reads after a gap near the TTL before the prior gives way: see min_sample(q) for f = 2
RESOLUTION_S = 1.0


def learned_margin(overruns: Sequence[tuple[float, bool]], prior: float) -> tuple[float, str]:
    """(margin in seconds, "ledger" | "prior") from (seconds past the TTL, entry read?) observations."""
    seen = [(float(o), bool(alive)) for o, alive in overruns if 0.0 <= float(o) <= prior]
    if len(seen) < MIN_OBSERVATIONS:
        return float(prior), "prior"
    alive = max((o for o, a in seen if a), default=0.0)
    return min(float(prior), alive + RESOLUTION_S), "ledger"
