"""The bench's outputs: a deterministic JSON document, rich tables, an HTML page.

Everything here is a pure function of a ``ReplayResult``: floats are rounded,
lists keep the (sorted) file order, so ``--json`` is byte-identical across
runs and ``PYTHONHASHSEED`` values.
"""

from __future__ import annotations

import html
from typing import Any

from scalpel_desktop.bench.check import check_report
from scalpel_desktop.bench.replay import ReplayResult, totals_for

PREFIX_NOTE = ("transcripts hold no system prompt and no tool declarations: their size is inferred per "
               "sequence from the first request's usage (prompt total minus the estimated history)")


def _r(x: float, n: int = 6) -> float:
    return round(float(x), n)


def build_json(res: ReplayResult, corpus: str, prices_as_of: str, sessions: bool = False) -> dict[str, Any]:
    s = res.sessions
    check = check_report(s)
    pols = []
    for name in res.policies:
        t = totals_for(s, name)
        pols.append({
            "name": name, "cost": _r(t.cost), "saving_usd": _r(t.saving_usd), "saving_pct": _r(t.saving_pct, 3),
            "sessions_worse": t.sessions_worse, "worst_session_pct": _r(t.worst_session_pct, 3),
            "best_session_pct": _r(t.best_session_pct, 3), "median_session_pct": _r(t.median_session_pct, 3),
            "cuts": t.cuts,
        })
    ceil = totals_for(s, "ceiling")
    share = {p["name"]: _r(100.0 * p["saving_usd"] / ceil.saving_usd, 2) if ceil.saving_usd > 0 else 0.0
             for p in pols if p["name"] != "off"}
    doc: dict[str, Any] = {
        "corpus": corpus,
        "tier": res.tier,
        "prices_as_of": prices_as_of,
        "files": res.files,
        "lines": res.lines,
        "sessions_replayed": len(s),
        "requests_replayed": sum(x.requests for x in s),
        "skipped": {
            "too_short": res.skipped.get("too_short", 0),
            "oversized": res.skipped.get("oversized", 0),
            "unreadable_files": res.skipped.get("unreadable", 0),
            "unreadable_lines": res.bad_lines,
            "no_requests": res.skipped.get("no_requests", 0),
            "errors": res.skipped.get("errors", 0),
        },
        "prefix": PREFIX_NOTE,
        "real_cost": _r(sum(x.real_cost for x in s)),
        "check": check.as_dict(),
        "breaks_used": sum(x.breaks for x in s),
        "baseline": "policy off: the unmodified sessions through the cache model, with the client's breaks",
        "policies": pols,
        "ceiling": {"cost": _r(ceil.cost), "saving_usd": _r(ceil.saving_usd), "saving_pct": _r(ceil.saving_pct, 3),
                    "share_reached_pct": share},
        "policy_errors": sorted({f"{x.name}: {k}: {v}" for x in s for k, v in x.errors.items()}),
    }
    if sessions:
        doc["sessions"] = [
            {"session": x.name, "path": x.path, "kind": x.kind, "model": x.model, "requests": x.requests,
             "real_cost": _r(x.real_cost), "check_cost": _r(x.check_cost), "breaks": x.breaks,
             "prefix_tokens": x.prefix_tokens,
             "costs": {k: _r(v) for k, v in sorted(x.costs.items())}}
            for x in s
        ]
    return doc


def render_tables(doc: dict[str, Any], console, sessions: list | None = None) -> None:
    from rich.table import Table

    ch = doc["check"]
    console.print(f"[bold]scalpel bench[/] {doc['corpus']}  tier {doc['tier']}  prices as of {doc['prices_as_of']}")
    console.print(f"{doc['sessions_replayed']} sequences, {doc['requests_replayed']} requests replayed; "
                  f"real bill ${doc['real_cost']:.2f}")
    t = Table(title="Policies (savings against the simulated unmodified sessions)")
    for col in ("policy", "cost $", "saving $", "saving %", "worse", "worst %", "median %", "best %", "cuts"):
        t.add_column(col, justify="right" if col != "policy" else "left", no_wrap=col == "policy")
    for p in doc["policies"]:
        t.add_row(p["name"], f"{p['cost']:.3f}", f"{p['saving_usd']:.3f}", f"{p['saving_pct']:.2f}",
                  str(p["sessions_worse"]), f"{p['worst_session_pct']:.1f}", f"{p['median_session_pct']:.1f}",
                  f"{p['best_session_pct']:.1f}", str(p["cuts"]))
    c = doc["ceiling"]
    t.add_row("[italic]ceiling[/]", f"{c['cost']:.3f}", f"{c['saving_usd']:.3f}", f"{c['saving_pct']:.2f}",
              "-", "-", "-", "-", "-")
    console.print(t)
    mark = "within" if ch["within_target"] else "OUTSIDE"
    console.print(f"Check the judge: simulated ${ch['simulated_cost']:.2f} vs real ${ch['real_cost']:.2f} "
                  f"({ch['error_pct']:+.2f}%, {mark} the {ch['target_pct']:.0f}% target); "
                  f"{ch['client_breaks_in_real_usage']} client cache breaks in the real usage, "
                  f"{doc['breaks_used']} used by the replay.")
    for row in ch["off_target_sessions"]:
        console.print(f"  {row['session']}: {row['error_pct']:+.1f}%  ({row['why']})")
    sk = doc["skipped"]
    console.print("Skipped: " + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in sk.items()))
    console.print(f"[dim]{doc['prefix']}[/]")
    if sessions:
        st = Table(title="Sessions")
        names = [p["name"] for p in doc["policies"]] + ["ceiling"]
        for col in ["session", "kind", "reqs", "real $", "check $"] + [f"{n} $" for n in names]:
            st.add_column(col, justify="left" if col in ("session", "kind") else "right")
        for x in sessions:
            st.add_row(x["session"], x["kind"], str(x["requests"]), f"{x['real_cost']:.3f}", f"{x['check_cost']:.3f}",
                       *[f"{x['costs'].get(n, 0.0):.3f}" for n in names])
        console.print(st)


def render_html(doc: dict[str, Any], sessions: list[dict[str, Any]], after: str = "cold") -> str:
    """A self-contained page: the tables and an inline SVG of cost per session before/after."""
    rows = sorted(sessions, key=lambda x: -x["costs"]["off"])
    width, bar_h, gap, left = 900, 9, 6, 230
    top = 30
    height = top + len(rows) * (2 * bar_h + gap) + 20
    peak = max([x["costs"]["off"] for x in rows] + [x["costs"].get(after, 0.0) for x in rows] + [1e-9])
    scale = (width - left - 80) / peak
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
             f'aria-label="cost per session before and after">',
             f'<text x="{left}" y="16" font-size="12">grey: off (unmodified) &#160; blue: {html.escape(after)}</text>']
    y = top
    for x in rows:
        before = x["costs"]["off"]
        aft = x["costs"].get(after, before)
        parts.append(f'<text x="{left - 6}" y="{y + bar_h + 3}" font-size="10" text-anchor="end">'
                     f'{html.escape(x["session"])}</text>')
        parts.append(f'<rect x="{left}" y="{y}" width="{before * scale:.1f}" height="{bar_h}" fill="#999"/>')
        parts.append(f'<rect x="{left}" y="{y + bar_h}" width="{aft * scale:.1f}" height="{bar_h}" fill="#2a6fdb"/>')
        parts.append(f'<text x="{left + before * scale + 4:.1f}" y="{y + bar_h + 3}" font-size="9">'
                     f'${before:.3f} &#8594; ${aft:.3f}</text>')
        y += 2 * bar_h + gap
    parts.append("</svg>")
    pol_rows = "".join(
        f"<tr><td>{html.escape(p['name'])}</td><td>{p['cost']:.3f}</td><td>{p['saving_usd']:.3f}</td>"
        f"<td>{p['saving_pct']:.2f}</td><td>{p['sessions_worse']}</td><td>{p['worst_session_pct']:.1f}</td></tr>"
        for p in doc["policies"])
    ch = doc["check"]
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>scalpel bench</title>"
        "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}</style></head><body>"
        f"<h1>scalpel bench</h1><p>{html.escape(doc['corpus'])}, tier {doc['tier']}, "
        f"{doc['sessions_replayed']} sequences, {doc['requests_replayed']} requests, prices as of "
        f"{html.escape(doc['prices_as_of'])}.</p>"
        "<table><tr><th>policy</th><th>cost $</th><th>saving $</th><th>saving %</th><th>sessions worse</th>"
        f"<th>worst %</th></tr>{pol_rows}</table>"
        f"<p>Ceiling: {doc['ceiling']['saving_pct']:.2f}% (${doc['ceiling']['saving_usd']:.3f}). "
        f"Check: simulated ${ch['simulated_cost']:.2f} vs real ${ch['real_cost']:.2f} ({ch['error_pct']:+.2f}%).</p>"
        f"<p>{html.escape(doc['prefix'])}</p><h2>Cost per session</h2>" + "".join(parts) + "</body></html>\n"
    )
