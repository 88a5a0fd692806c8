"""Removal suggestions from the inventory, with the evidence they rest on.

A declaration is suggested only when it was declared in at least 5 sessions
with a captured inventory, those sessions span at least 7 days, and it was
called in none of them. Every suggestion carries its weight in tokens, the
sessions and days it rests on, a PROJECTED saving (labelled so, never mixed
with the realized savings of ``tools/realized.py``) and a plain-words basis.
The report also gives coverage (sessions that could answer) and how many
never-called declarations were withheld for lack of evidence, and why.
An MCP server none of whose tools was ever called is suggested as a whole
(``mcp__<server>``) instead of tool by tool.
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any

from scalpel_desktop.accounting.prices import PriceTable
from scalpel_desktop.tools import names as tn
from scalpel_desktop.tools.store import ToolStore

MIN_SESSIONS = 5
MIN_DAYS = 7.0
DAY = 86400.0


@dataclass
class _Evidence:
    name: str
    kind: str
    sessions: set[str]
    starts: list[float]
    tokens: int
    calls: int
    summary: str

    @property
    def days(self) -> float:
        return (max(self.starts) - min(self.starts)) / DAY if self.starts else 0.0


def build_report(store: ToolStore, *, prices: Any = None, min_sessions: int = MIN_SESSIONS,
                 min_days: float = MIN_DAYS) -> dict[str, Any]:
    """``prices``: the caller's table (the runtime's, loaded once); None loads it here, once."""
    if prices is None:
        try:
            prices = PriceTable.load()
        except Exception:  # noqa: BLE001 - a bad price file: the report goes on unpriced
            prices = None
    sessions = {r[0]: {"first_seen": r[1], "requests": r[2], "model": r[3]} for r in store.query(
        "SELECT s.session, s.first_seen, s.requests, s.model FROM tool_sessions s "
        "WHERE EXISTS (SELECT 1 FROM tool_declarations d WHERE d.session = s.session)")}
    decl_rows = store.query(
        "SELECT session, name, kind, tokens, summary, last_seen FROM tool_declarations ORDER BY last_seen")
    call_rows = store.query("SELECT session, name FROM tool_calls")
    removed = set(store.removals())

    calls_by: dict[tuple[str, str], int] = Counter((s, n) for s, n in call_rows)
    ev: dict[str, _Evidence] = {}
    for session, name, kind, tokens, summary, _last in decl_rows:
        if session not in sessions:
            continue
        e = ev.get(name)
        if e is None:
            e = ev[name] = _Evidence(name, kind, set(), [], tokens, 0, summary)
        if session not in e.sessions:
            e.sessions.add(session)
            e.starts.append(sessions[session]["first_seen"])
            e.calls += calls_by.get((session, name), 0)
        e.tokens, e.kind, e.summary = tokens, kind, summary or e.summary  # the latest declaration

    # Whole MCP servers: declared when any of their tools is; called when any of them is.
    servers: dict[str, dict[str, Any]] = defaultdict(lambda: {"sessions": set(), "tools": set()})
    for name, e in ev.items():
        s = tn.mcp_server(name)
        if s:
            servers[s]["tools"].add(name)
            servers[s]["sessions"] |= e.sessions
    for s, info in servers.items():
        tools = info["tools"]
        calls = sum(ev[t].calls for t in tools)
        starts = [sessions[x]["first_seen"] for x in info["sessions"]]
        ev["mcp__" + s] = _Evidence("mcp__" + s, "mcp-server", set(info["sessions"]), starts,
                                    sum(ev[t].tokens for t in tools), calls, f"{len(tools)} tool(s) of MCP server {s}")

    def qualifies(e: _Evidence) -> str:
        if len(e.sessions) < min_sessions:
            return f"declared in {len(e.sessions)} session(s); needs {min_sessions}"
        if e.days < min_days:
            return f"its sessions span {e.days:.1f} day(s); needs {min_days:g}"
        return ""

    suggested: list[_Evidence] = []
    withheld: list[dict[str, Any]] = []
    covered_by_server = set()
    for s in servers:
        e = ev["mcp__" + s]
        if e.calls == 0 and not qualifies(e) and "mcp__" + s not in removed and \
                all(ev[t].calls == 0 and not qualifies(ev[t]) for t in servers[s]["tools"]) and len(servers[s]["tools"]) > 1:
            suggested.append(e)
            covered_by_server |= servers[s]["tools"]
    for name, e in sorted(ev.items()):
        if e.kind in ("server", "mcp-server") or e.calls > 0 or name in removed or name in covered_by_server:
            continue
        if any(tn.covers(r, name) for r in removed):
            continue
        why = qualifies(e)
        if why:
            withheld.append({"name": name, "kind": e.kind, "sessions": len(e.sessions), "days": round(e.days, 1),
                             "reason": why})
        else:
            suggested.append(e)

    out = [_suggestion(e, sessions, prices) for e in suggested]
    out.sort(key=lambda s: -s["tokens"])
    starts = [v["first_seen"] for v in sessions.values()]
    return {
        "coverage": {
            "sessions": len(sessions),
            "first_session": min(starts) if starts else None,
            "last_session": max(starts) if starts else None,
            "days": round((max(starts) - min(starts)) / DAY, 1) if starts else 0.0,
        },
        "thresholds": {"min_sessions": min_sessions, "min_days": min_days, "calls": 0},
        "suggestions": out,
        "withheld": {"count": len(withheld), "items": withheld},
        "generated_at": time.time(),
    }


def _suggestion(e: _Evidence, sessions: dict[str, dict], prices: Any) -> dict[str, Any]:
    reqs = [sessions[s]["requests"] for s in e.sessions]
    mean_requests = sum(reqs) / len(reqs) if reqs else 0.0
    models = Counter(sessions[s]["model"] for s in e.sessions if sessions[s]["model"])
    # Most frequent model; ties broken by name so the figure never depends on hash order.
    model = max(models.items(), key=lambda kv: (kv[1], kv[0]))[0] if models else ""
    per_session_tokens = round(e.tokens * mean_requests)
    usd = None
    rates = _rates(prices, model)
    if rates is not None:
        # Declarations sit at the start of the prefix: almost every request reads them from the cache.
        usd = per_session_tokens * float(rates.cache_read)
    first, last = min(e.starts), max(e.starts)
    builtin = e.kind == "builtin"
    basis = (f"Declared in {len(e.sessions)} captured session(s) between {_day(first)} and {_day(last)} "
             f"({e.days:.1f} days) and called in none of them.")
    if builtin:
        basis += " It is a Claude Code built-in: removing it needs --force."
    return {
        "name": e.name,
        "kind": e.kind,
        "summary": e.summary,
        "tokens": e.tokens,
        "sessions": len(e.sessions),
        "days": round(e.days, 1),
        "first_session": first,
        "last_session": last,
        "calls": 0,
        "projected": {
            "label": "projected",
            "tokens_per_request": e.tokens,
            "tokens_per_session": per_session_tokens,
            "mean_requests_per_session": round(mean_requests, 1),
            "usd_per_session": None if usd is None else round(usd, 6),
            "priced_as": f"cache read, {model}" if usd is not None else "no price known",
        },
        "basis": basis,
        "needs_force": builtin,
        "command": f"scalpel tools remove {e.name}" + (" --force" if builtin else ""),
    }


def _rates(prices: Any, model: str) -> Any:
    if not model or prices is None:
        return None
    try:
        return prices.rates(model)
    except Exception:  # noqa: BLE001
        return None


def _day(ts: float) -> str:
    return time.strftime("%Y-%m-%d", time.localtime(ts))
