"""The dashboard's one notice line: what is off or failing, under the proxy bar.

Two sources, one line: the running proxy's own ``degraded`` list (its
status: recording off, surgery off, the tool filter off, the spill, order
waits; fail and warn only, since a pause or ``policy off`` already shows in
the bar as the user's choice), and the dashboard's own failure to read the
ledger. A ledger that stays unreadable is said here once and stays said,
rather than in a toast per refresh; the line goes when all is well again.
No Textual here: the app puts the text in a ``Static``.
"""

from __future__ import annotations

from rich.text import Text

from scalpel_desktop.tui.proxy import ProxyState

HINT = "scalpel doctor"


def problems(state: ProxyState | None) -> list[dict]:
    """The proxy's degraded items that need a look (fail and warn), most serious first."""
    if state is None or not state.running:
        return []
    items = state.status.get("degraded") or []
    return [d for d in items if isinstance(d, dict) and d.get("severity") in ("fail", "warn")]


def notice(state: ProxyState | None, ledger_error: str) -> tuple[Text | None, str]:
    """(the line, its tooltip with every reason and fix); (None, "") when there is nothing to say."""
    items = problems(state)
    labels = [str(d.get("label") or d.get("code")) for d in items]
    details = [f"{d.get('reason')}\n  fix: {d.get('fix')}" for d in items]
    proxy_says_ledger = any(str(d.get("code", "")).startswith("ledger-") for d in items)
    if ledger_error and not proxy_says_ledger:
        labels.insert(0, "ledger unreadable")
        details.insert(0, f"the dashboard cannot read the ledger ({ledger_error}): its figures are unknown")
    if not labels:
        return None, ""
    failing = ledger_error or any(d.get("severity") == "fail" for d in items)
    line = Text.assemble(("⚠ ", "bold red" if failing else "bold yellow"), (", ".join(labels), "bold"),
                         (f" ({HINT}: why, and what to do)", "dim"))
    return line, "\n".join(details)


def today_words(status: dict) -> str:
    """The proxy's "requests today", or "unknown" when it could not read the ledger."""
    n = status.get("requests_today")
    return "unknown" if n is None else f"{int(n):,}"
