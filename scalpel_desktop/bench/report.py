"""The bench's outputs: a deterministic JSON document, rich tables, an HTML page.

Everything here is a pure function of a ``ReplayResult``: floats are rounded,
lists keep the (sorted) file order, so ``--json`` is byte-identical across
runs and ``PYTHONHASHSEED`` values.
"""

from __future__ import annotations

import html
from typing import Any

from scalpel_desktop.accounting.misses import summary as miss_summary
from scalpel_desktop.bench.check import check_report
from scalpel_desktop.bench.replay import HINTED, ReplayResult, totals_for

BASELINE_NOTE = ("the real bill: each request's usage counts at the price table's rates; a policy costs "
                 "real + (simulated with it - simulated without), one anchored simulator for both")
PREFIX_NOTE = ("what transcripts do not show (system prompt, tools, reminders, attachments) is sized per request "
               "from its real prompt total; content tokens = its bytes x the sequence's own tokens per byte")


def _r(x: float, n: int = 6) -> float:
    return round(float(x), n) + 0.0  # never -0.0


def _bets(sessions: list, name: str) -> dict[str, Any]:
    """A stage policy's warm cuts (the bets, ``surgery/budget.py``): how many, what they staked, what
    its cuts banked in the user's risk budget, and the later requests estimated against those earned."""
    if not any(name in x.budget for x in sessions):
        return {}
    outcomes = [b for x in sessions for b in x.bets.get(name, ())]
    return {"warm_cuts": len(outcomes),
            "banked_usd": _r(sum(x.budget.get(name, (0.0, 0.0))[0] for x in sessions)),
            "staked_usd": _r(sum(x.budget.get(name, (0.0, 0.0))[1] for x in sessions)),
            "turns_estimated": sum(e for e, _ in outcomes), "turns_earned": sum(t for _, t in outcomes)}


def _keeper(sessions: list, name: str) -> dict[str, Any]:
    """A keeper arm's pings (``bench/keepalive.py``): how many, their cost, the returns they kept warm past
    the TTL and what those banked, and the sessions where it sent any."""
    got = [x.keeper[name] for x in sessions if name in x.keeper]
    if not got:
        return {}
    return {"pings": sum(g["pings"] for g in got), "ping_cost_usd": _r(sum(g["ping_cost_usd"] for g in got)),
            "returns_kept": sum(g["kept"] for g in got), "kept_saved_usd": _r(sum(g["kept_saved_usd"] for g in got)),
            "sessions_pinged": sum(1 for g in got if g["pings"])}


def build_json(res: ReplayResult, corpus: str, prices_as_of: str, sessions: bool = False) -> dict[str, Any]:
    s = res.sessions
    check = check_report(s)
    real = sum(x.real_cost for x in s)
    ceil = totals_for(s, "ceiling")
    pols = []
    for name in res.policies:
        t = totals_for(s, name)
        pols.append({
            "name": name, "cost_usd": _r(t.cost), "saving_usd": _r(t.saving_usd), "saving_pct": _r(t.saving_pct, 3),
            "sessions_worse": t.sessions_worse, "worst_session_pct": _r(t.worst_session_pct, 3),
            "best_session_pct": _r(t.best_session_pct, 3), "median_session_pct": _r(t.median_session_pct, 3),
            # the headline is what the live proxy can prove: saving_* ARE the proven figures
            "proven_saving_usd": _r(t.saving_usd), "proven_saving_pct": _r(t.saving_pct, 3),
            "hinted_saving_usd": _r(t.hinted_saving_usd), "hinted_saving_pct": _r(t.hinted_saving_pct, 3),
            "hinted_sessions_worse": t.hinted_sessions_worse,
            "ceiling_share_pct": _r(100.0 * t.saving_usd / ceil.saving_usd, 2) if ceil.saving_usd > 0 else 0.0,
            "cuts": t.cuts, "proven_cuts": t.cuts,
            "hinted_cuts": sum(x.cuts.get(name + HINTED, x.cuts.get(name, 0)) for x in s),
            **_bets(s, name), **_keeper(s, name),
        })
    methods: dict[str, int] = {}
    for x in s:
        methods[x.ratio.method] = methods.get(x.ratio.method, 0) + 1
    weight = sum(x.real_cost for x in s) or 1.0
    doc: dict[str, Any] = {
        "corpus": corpus,
        "tier": res.tier,
        "prices_as_of": prices_as_of,
        "baseline": "real",
        "baseline_note": BASELINE_NOTE,
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
        "real_cost_usd": _r(real),
        "check": check.as_dict(),
        "tokens_per_byte": {
            "sequences_by_method": dict(sorted(methods.items())),
            "fit_error_pct_weighted": _r(sum(x.ratio.error_pct * x.real_cost for x in s) / weight, 2),
        },
        "policies": pols,
        "ceiling": {"cost_usd": _r(ceil.cost), "saving_usd": _r(ceil.saving_usd), "saving_pct": _r(ceil.saving_pct, 3)},
        "policy_errors": sorted({f"{x.name}: {k}: {v}" for x in s for k, v in x.errors.items()}),
        # the real usage's cache misses (bench/misses.py), over the real bill
        "misses": miss_summary((m for x in s for m in x.misses), real),
    }
    if sessions:
        doc["sessions"] = [
            {"session": x.name, "path": x.path, "kind": x.kind, "model": x.model, "requests": x.requests,
             "real_cost_usd": _r(x.real_cost), "check_error_pct": _r(check.rows[i].error_pct, 3),
             "tokens_per_byte": _r(x.ratio.tokens_per_byte), "ratio_method": x.ratio.method,
             "misses": len(x.misses), "miss_cost_usd": _r(sum(m.cost_usd for m in x.misses)),
             "costs_usd": {k: _r(x.cost(k)) for k in sorted(x.costs)}}
            for i, x in enumerate(s)
        ]
    return doc


def render_tables(doc: dict[str, Any], console, sessions: list | None = None) -> None:
    """The bench's tables on ``console``: they fit its width on a terminal (lower-priority columns
    drop first, figures are never cut) and are full width when piped (``textable``)."""
    from scalpel_desktop.textable import RULE, Col, render

    width = console.width if console.is_terminal else None

    def out(text: str = "") -> None:
        if width is None or len(text) <= width:
            console.out(text, highlight=False)
            return
        import textwrap

        for line in textwrap.wrap(text, width, break_on_hyphens=False, break_long_words=True,
                                  subsequent_indent="  "):
            console.out(line, highlight=False)

    def table(cols, rows) -> None:
        for line in render(cols, rows, width):
            out(line)

    ch = doc["check"]
    out(f"scalpel bench {doc['corpus']}  tier {doc['tier']}  prices as of {doc['prices_as_of']}")
    out(f"{doc['sessions_replayed']} sequences, {doc['requests_replayed']} requests replayed; "
        f"real bill ${doc['real_cost_usd']:.2f} (the baseline)")
    out()
    out("Policies (cost = real bill + simulated change; % of the real bill)")
    cols = [Col("policy"), Col("cost $", True), Col("saving $", True), Col("saving %", True), Col("hinted %", True),
            Col("worse", True, 1), Col("worst %", True, 2), Col("best %", True, 2), Col("cuts", True, 1)]
    rows: list = [[p["name"], f"{p['cost_usd']:.3f}", f"{p['saving_usd']:.3f}", f"{p['saving_pct']:.2f}",
                   f"{p['hinted_saving_pct']:.2f}", str(p["sessions_worse"]), f"{p['worst_session_pct']:.1f}",
                   f"{p['best_session_pct']:.1f}", str(p["cuts"])] for p in doc["policies"]]
    c = doc["ceiling"]
    rows += [RULE, ["ceiling", f"{c['cost_usd']:.3f}", f"{c['saving_usd']:.3f}", f"{c['saving_pct']:.2f}",
                    "-", "-", "-", "-", "-"]]
    table(cols, rows)
    mark = "within" if ch["within_target"] else "OUTSIDE"
    out(f"Check: the simulator's unmodified arm ${ch['simulated_cost_usd']:.2f} vs the real bill "
        f"${ch['real_cost_usd']:.2f} ({ch['error_pct']:+.2f}%, {mark} the {ch['target_pct']:.0f}% target; "
        f"median session {ch['abs_error_pct_by_session_median']:.2f}%).")
    for row in ch["off_target_sessions"]:
        out(f"  {row['session']}: {row['error_pct']:+.1f}%")
    out("saving: with the breaks the live proxy sees (compaction, model switches, TTL expiry); "
        "hinted: also told where the usage shows a read stopping short for no visible reason.")
    for p in doc["policies"]:
        if "pings" in p:  # the cache keeper (bench/keepalive.py): its cuts column counts pings
            out(f"{p['name']}: the default policy plus the cache keeper: {p['pings']} pings "
                f"(${p['ping_cost_usd']:.3f}) in {p['sessions_pinged']} sessions, {p['returns_kept']} returns kept "
                f"warm past the TTL (${p['kept_saved_usd']:.3f} of re-writes avoided, net of free cuts forgone).")
    if "misses" in doc:
        out()
        _misses(doc["misses"], doc["real_cost_usd"], out, table)
    sk = doc["skipped"]
    out("Skipped: " + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in sk.items()))
    out(doc["prefix"])
    if sessions:
        out()
        out("Sessions (cost $ on the real bill)")
        names = [p["name"] for p in doc["policies"] if p["name"] != "off"] + ["ceiling"]
        scols = [Col("session"), Col("kind", drop=9), Col("reqs", True, 8), Col("real $", True),
                 Col("check %", True, 7)]
        scols += [Col(f"{n} $", True, 1 + k) for k, n in enumerate(names)]
        table(scols, [[x["session"], x["kind"], str(x["requests"]), f"{x['real_cost_usd']:.3f}",
                       f"{x['check_error_pct']:+.2f}",
                       *[f"{x['costs_usd'].get(n, x['real_cost_usd']):.3f}" for n in names]] for x in sessions])


def _misses(m: dict[str, Any], bill: float, out, table) -> None:
    """The real usage's cache misses, one row per cause and their total (% of the real bill)."""
    from scalpel_desktop.textable import RULE, Col

    out("Cache misses (a read short of what the model's previous request cached)")
    cols = [Col("cause"), Col("misses", True), Col("tokens", True), Col("cost $", True), Col("% of bill", True)]
    pct = 100.0 / bill if bill > 0 else 0.0  # percent of the real bill per dollar
    rows: list = [[cause, str(c["count"]), f"{c['tokens']:,}", f"{c['cost_usd']:.3f}", f"{c['cost_usd'] * pct:.2f}"]
                  for cause, c in m["by_cause"].items()]
    rows += [RULE, ["all", str(m["count"]), f"{m['tokens']:,}", f"{m['cost_usd']:.3f}", f"{m['cost_pct']:.2f}"]]
    table(cols, rows)


def render_html(doc: dict[str, Any], sessions: list[dict[str, Any]], after: str = "cold") -> str:
    """A self-contained page: the tables and an inline SVG of cost per session, real and after."""
    rows = sorted(sessions, key=lambda x: -x["real_cost_usd"])
    width, bar_h, gap, left = 900, 9, 6, 230
    top = 30
    height = top + len(rows) * (2 * bar_h + gap) + 20
    peak = max([x["real_cost_usd"] for x in rows] + [x["costs_usd"].get(after, 0.0) for x in rows] + [1e-9])
    scale = (width - left - 80) / peak
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
             f'aria-label="cost per session, real and after">',
             f'<text x="{left}" y="16" font-size="12">grey: the real bill &#160; blue: {html.escape(after)}</text>']
    y = top
    for x in rows:
        before = x["real_cost_usd"]
        aft = x["costs_usd"].get(after, before)
        parts.append(f'<text x="{left - 6}" y="{y + bar_h + 3}" font-size="10" text-anchor="end">'
                     f'{html.escape(x["session"])}</text>')
        parts.append(f'<rect x="{left}" y="{y}" width="{before * scale:.1f}" height="{bar_h}" fill="#999"/>')
        parts.append(f'<rect x="{left}" y="{y + bar_h}" width="{max(0.0, aft) * scale:.1f}" height="{bar_h}" '
                     f'fill="#2a6fdb"/>')
        parts.append(f'<text x="{left + before * scale + 4:.1f}" y="{y + bar_h + 3}" font-size="9">'
                     f'${before:.3f} &#8594; ${aft:.3f}</text>')
        y += 2 * bar_h + gap
    parts.append("</svg>")
    pol_rows = "".join(
        f"<tr><td>{html.escape(p['name'])}</td><td>{p['cost_usd']:.3f}</td><td>{p['saving_usd']:.3f}</td>"
        f"<td>{p['saving_pct']:.2f}</td><td>{p['hinted_saving_pct']:.2f}</td><td>{p['sessions_worse']}</td>"
        f"<td>{p['worst_session_pct']:.1f}</td></tr>"
        for p in doc["policies"])
    ch = doc["check"]
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>scalpel bench</title>"
        "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}</style></head><body>"
        f"<h1>scalpel bench</h1><p>{html.escape(doc['corpus'])}, tier {doc['tier']}, "
        f"{doc['sessions_replayed']} sequences, {doc['requests_replayed']} requests, prices as of "
        f"{html.escape(doc['prices_as_of'])}; real bill ${doc['real_cost_usd']:.2f} (the baseline).</p>"
        "<table><tr><th>policy</th><th>cost $</th><th>saving $</th><th>saving % of the real bill</th>"
        f"<th>hinted %</th><th>sessions worse</th><th>worst %</th></tr>{pol_rows}</table>"
        f"<p>Ceiling: {doc['ceiling']['saving_pct']:.2f}% (${doc['ceiling']['saving_usd']:.3f}). "
        f"Check: the unmodified arm ${ch['simulated_cost_usd']:.2f} vs the real bill ${ch['real_cost_usd']:.2f} "
        f"({ch['error_pct']:+.2f}%).</p>"
        f"<p>{html.escape(doc['prefix'])}</p><h2>Cost per session</h2>" + "".join(parts) + "</body></html>\n"
    )
