"""What ``scalpel tools ls`` shows: the inventory per name, the removal list, realized savings."""

from __future__ import annotations

from typing import Any

from scalpel_desktop.tools import names as tn
from scalpel_desktop.tools.store import ToolStore


def inventory_listing(store: ToolStore, config: Any) -> dict[str, Any]:
    removals = store.removals()
    on = bool(config.get("tool_filter"))
    rows = store.query(
        """SELECT d.name, d.kind, d.tokens, d.last_seen, d.session FROM tool_declarations d
           ORDER BY d.last_seen""")
    calls = dict(store.query("SELECT name, COUNT(*) FROM tool_calls GROUP BY name"))
    realized_by = {r[0]: (r[1], r[2]) for r in store.query(
        "SELECT name, SUM(tokens), SUM(usd) FROM tool_filter_savings GROUP BY name")}
    agg: dict[str, dict[str, Any]] = {}
    for name, kind, tokens, last_seen, session in rows:
        a = agg.setdefault(name, {"name": name, "kind": kind, "server": tn.mcp_server(name), "tokens": tokens,
                                  "sessions": set(), "calls": calls.get(name, 0), "last_seen": last_seen})
        a["sessions"].add(session)
        a["kind"], a["tokens"], a["last_seen"] = kind, tokens, max(a["last_seen"], last_seen)
    tools = []
    for name in sorted(agg, key=lambda n: (-agg[n]["tokens"], n)):
        a = agg[name]
        a["sessions"] = len(a["sessions"])
        cover = next((r for r in sorted(removals) if tn.covers(r, name)), None)
        a["removal"] = cover
        a["status"] = ("kept" if a["kind"] == "server" else
                       "" if cover is None else
                       f"removed by {cover}" + ("" if on else " (filter off)"))
        tok, usd = realized_by.get(name, (0, None))
        a["realized"] = {"tokens": tok or 0, "usd": usd}
        tools.append(a)
    total = store.query("SELECT COALESCE(SUM(tokens),0), SUM(usd), COUNT(DISTINCT ts || session) FROM tool_filter_savings")[0]
    sessions = store.query("SELECT COUNT(*) FROM tool_sessions s WHERE EXISTS "
                           "(SELECT 1 FROM tool_declarations d WHERE d.session = s.session)")[0][0]
    return {
        "tool_filter": on,
        "removals": list(removals.values()),
        "sessions": sessions,
        "tools": tools,
        "realized": {"tokens": total[0], "usd": total[1], "requests": total[2],
                     "label": "realized: requests the filter changed, priced at their billed tier"},
    }
