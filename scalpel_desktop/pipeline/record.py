"""The last stage: one ledger row per request, from whitelisted fields only.

The row is built field by field from the exchange: sizes, estimates, the
provider's usage counts, the decision, timings. Nothing is copied wholesale,
so no message content and no header value (the user agent excepted,
truncated) can reach the database, and strings that come from elsewhere
(reasons, errors, figures) are shortened and scrubbed of anything shaped like
a credential. Writing happens in the ``LedgerWriter``'s thread.
"""

from __future__ import annotations

import json
import logging
import math
import re
from typing import Any

from scalpel_desktop.exchange import Exchange
from scalpel_desktop.pipeline.miss_watch import MissWatch

log = logging.getLogger("scalpel.pipeline")

CLIENT_MAX = 120
LABEL_MAX = 200
FIGURE_KEY_MAX = 40
FIGURE_STR_MAX = 40
FIGURES_MAX_KEYS = 40

# Shapes of secrets that might ride along in an exception message or upstream error text.
_SECRET = re.compile(
    r"(sk-[A-Za-z0-9_\-]{8,}|Bearer\s+\S+|x-api-key\S*\s*[:=]\s*\S+|api[_-]?key\S*\s*[:=]\s*\S+|[A-Za-z0-9_\-]{40,})",
    re.IGNORECASE,
)


class LedgerRecorder:
    name = "record"
    mutates = False

    def __init__(self, writer: Any, prices: Any = None):
        """``prices``: the price table, to find and price cache misses (``pipeline/miss_watch.py``)."""
        self.writer = writer
        self.misses = MissWatch(prices) if prices is not None else None

    def on_request(self, ex: Exchange) -> None:
        pass

    on_turn = on_request

    def on_response(self, ex: Exchange) -> None:
        row = build_row(ex)
        if self.misses is not None:
            try:
                row.update(self.misses.fields(ex))
            except Exception:  # noqa: BLE001 - the row goes without its miss, never not at all
                log.exception("finding a cache miss failed")
        self.writer.submit(row)


def build_row(ex: Exchange) -> dict[str, Any]:
    req, resp, d = ex.request, ex.response, ex.decision
    usage = resp.usage if resp is not None else None
    realized = ex.realized
    row: dict[str, Any] = {
        "ts": _num(req.received_at),
        "session": _trunc(ex.key.session_id, 100) if ex.key else None,
        "agent": _trunc(ex.key.agent_id, 100) if ex.key and ex.key.agent_id else None,
        "client": _label(req.headers.get("user-agent", ""), CLIENT_MAX) or None,
        "api": _trunc(req.api, 20),
        "endpoint": _trunc(req.endpoint, 20),
        "model": _trunc(ex.model, 100) or None,
        "status": resp.status if resp is not None and isinstance(resp.status, int) else None,
        "body_bytes": len(req.body),
        "sent_bytes": len(ex.body_to_send()),
        "est_tokens_before": _int(ex.tokens_before),
        "est_tokens_after": _int(ex.tokens_after),
        "input_tokens": usage.input_tokens if usage is not None else None,
        "cache_write_5m": usage.cache_write_5m if usage is not None else None,
        "cache_write_1h": usage.cache_write_1h if usage is not None else None,
        "cache_read": usage.cache_read if usage is not None else None,
        "output_tokens": usage.output_tokens if usage is not None else None,
        "decision": _label(d.label, 30),
        "reason": _reason(d.label, d.reason),
        "tokens_removed": _int(d.tokens_removed),
        "figures": _figures(d.figures),
        "realized_tokens": sum(_int(r.tokens) or 0 for r in realized) if realized else None,
        "realized_usd": sum(_num(r.usd) or 0.0 for r in realized) if realized else None,
        **_sources(realized),
        "ttfb_ms": _num(resp.ttfb_ms) if resp is not None else None,
        "total_ms": _num(resp.total_ms) if resp is not None else None,
        "error": (_label(resp.error, LABEL_MAX) or None) if resp is not None else None,
        "project": _label(ex.project, 300) or None,
        "regions": _figures(ex.regions),
        # the user's risk budget (surgery/budget.py): what this request banked and staked
        "banked_usd": _num(ex.surgery.banked_usd) or None if ex.surgery is not None else None,
        "staked_usd": _num(ex.surgery.staked_usd) or None if ex.surgery is not None else None,
        **_resume_fields(ex),
        **_provider_miss(resp),
    }
    return row


def _provider_miss(resp: Any) -> dict[str, Any]:
    """The provider's own cache diagnosis, when the proxy asked for it (m010, ``proxy/diagnostics.py``)."""
    got = getattr(resp, "diagnosis", None)
    if got is None:
        return {}
    return {"provider_miss_reason": _label(got.reason, 40) or None, "provider_missed_tokens": _int(got.missed_tokens)}


def _resume_fields(ex: Exchange) -> dict[str, Any]:
    """What a first sighting after a restart needs (migration m007, ``surgery/resume.py``): a digest of
    hashes, never content; only for an answered request the surgery stage recorded."""
    got = ex.surgery.resume if ex.surgery is not None else None
    if got is None or ex.response is None:
        return {}
    units, digest, ttl = got
    return {"prefix_units": _int(units), "prefix_digest": _label(digest, 64) or None, "ttl_s": _num(ttl),
            "answered_at": _num(ex.response.finished_at)}


SOURCES = ("fit", "pooled", "own_request", "estimate")


def _sources(realized: list) -> dict[str, Any]:
    """How the realized figures were obtained (migration m004): one ratio per request, shared
    by every stage's entry (the conversation's, when its answer arrived)."""
    provs = [r.provenance for r in realized if isinstance(getattr(r, "provenance", None), dict) and r.provenance]
    if not provs:
        return {}
    by = {p.get("tokens") for p in provs}
    first = provs[0]
    err = [p.get("error_pct") for p in provs]
    return {
        "realized_tier": "usage" if all(p.get("tier") == "usage" for p in provs) else "estimate",
        "realized_tokens_by": by.pop() if len(by) == 1 and next(iter(by)) in SOURCES else "estimate",
        "realized_bytes": sum(_int(p.get("bytes")) or 0 for p in provs),
        "tokens_per_byte": _num(first.get("tokens_per_byte")),
        "ratio_pairs": _int(first.get("pairs")),
        "ratio_error_pct": None if any(e is None for e in err) else max(_num(e) or 0.0 for e in err),
    }


def _trunc(v: Any, limit: int) -> str | None:
    return v[:limit] if isinstance(v, str) and v else None


def _reason(action: str, reason: Any) -> str | None:
    """The decision's reason; for a failed stage only "stage: ExceptionType" (an
    exception's message may quote the request it choked on)."""
    if action == "error" and isinstance(reason, str):
        reason = ":".join(reason.split(":")[:2])
    return _label(reason, LABEL_MAX) or None


def _label(v: Any, limit: int) -> str:
    """A short single-line string with credential-shaped parts replaced."""
    if not isinstance(v, str) or not v:
        return ""
    s = _SECRET.sub("[redacted]", v.replace("\n", " ").replace("\r", " "))
    return s[:limit]


def _int(v: Any) -> int | None:
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, int):
        return v
    if isinstance(v, float) and math.isfinite(v):
        return int(round(v))
    return None


def _num(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return float(v) if math.isfinite(v) else None


def _figure_value(v: Any, depth: int = 0) -> Any:
    if v is None or isinstance(v, bool):
        return v
    if isinstance(v, (int, float)):
        return v if math.isfinite(v) else None
    if isinstance(v, str):
        return _label(v, FIGURE_STR_MAX)
    if isinstance(v, dict) and depth == 0:
        return {str(k)[:FIGURE_KEY_MAX]: _figure_value(x, 1) for k, x in list(v.items())[:FIGURES_MAX_KEYS]
                if isinstance(x, (int, float, bool, type(None)))}
    if isinstance(v, (list, tuple)) and depth == 0:
        return [x for x in v[:50] if isinstance(x, (int, float)) and not isinstance(x, bool)]
    return None


def _figures(figures: Any) -> str | None:
    """JSON of numbers and short labels only (nested one level for number maps)."""
    if not isinstance(figures, dict) or not figures:
        return None
    out = {}
    for k, v in list(figures.items())[:FIGURES_MAX_KEYS]:
        out[_label(str(k), FIGURE_KEY_MAX)] = _figure_value(v)
    return json.dumps(out, separators=(",", ":"), ensure_ascii=False)
