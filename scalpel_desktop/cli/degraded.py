"""The running proxy's degraded states as ``doctor`` checks and as ``status`` lines.

The proxy words them (``runtime_health``, answered as ``degraded`` by its
status); this module only lays them out: one doctor check per feature
(ledger, recording, surgery, tool filter, spill, order waits), each ``ok``
when the proxy reports nothing about it, and the same items under
``scalpel status``. With no proxy answering, ``doctor`` reads the ledger file
itself, so a garbage ledger is named before the proxy ever starts.

Text wraps to the terminal with a hanging indent; piped output keeps one
line per item (whole, for grep).
"""

from __future__ import annotations

import textwrap

CHECK_NAMES = {  # degraded code -> the doctor check it makes fail
    "proxy-restarting": "proxy state", "ledger-unreadable": "ledger", "ledger-locked": "ledger",
    "recording-off": "recording", "surgery-off": "surgery", "tool-filter-off": "tool filter",
    "spill-failing": "spill", "spill-over-cap": "spill", "order-waits": "order waits",
}
UNKNOWN = "unknown"
MB = 1024 * 1024


def hanging(head: str, text: str, width: int | None) -> list[str]:
    """``head + text`` wrapped to ``width`` with later lines under the text; one line when ``width`` is None."""
    if width is None or len(head) + len(text) <= width:
        return [head + text]
    return textwrap.wrap(text, max(20, width), initial_indent=head, subsequent_indent=" " * len(head),
                         break_long_words=False, break_on_hyphens=False) or [head]


def today_figure(st: dict) -> str:
    """Today's realized saving from a status snapshot, or "unknown" when the ledger could not be read."""
    tokens, usd = st.get("saved_tokens_today"), st.get("saved_usd_today")
    if tokens is None or usd is None:
        return UNKNOWN
    return f"{int(tokens):,} tokens (${float(usd):,.2f})"


def degraded_checks(status: dict) -> list[tuple[str, str, str, str]]:
    """The doctor checks (name, status, detail, fix) a running proxy's status makes: its degraded
    items, else ``ok`` lines. Plain tuples: ``doctor_checks`` makes them ``Check``s (no import loop)."""
    items = [d for d in status.get("degraded") or [] if isinstance(d, dict)]
    out = [(CHECK_NAMES.get(d.get("code"), str(d.get("code"))), str(d.get("severity") or "fail"),
            str(d.get("reason") or ""), str(d.get("fix") or "")) for d in items]
    named = {c[0] for c in out}
    fine = {
        "ledger": f"readable ({today_figure(status)} saved today)",
        "recording": "on" if status.get("recording", True) else "off",
        "surgery": f"on (tier {status.get('tier')}, policy {status.get('policy')})",
        "tool filter": "on" if status.get("tool_filter_active") else "off (opt-in: `scalpel tools on`)",
        "spill": _spill_detail(status),
    }
    for name, detail in fine.items():
        if name not in named:
            out.append((name, "ok" if name != "tool filter" or status.get("tool_filter_active") else "info",
                        detail, ""))
    return out


def _spill_detail(status: dict) -> str:
    size, cap = status.get("spill_bytes"), status.get("spill_max_mb")
    held = f"{size / MB:,.1f} MB of {cap:,} MB (spill_max_mb)" if isinstance(size, int) and cap else "size unknown"
    return f"{held}, no write failure"


def ledger_check_offline() -> tuple[str, str, str, str]:
    """The ledger file as the proxy would find it at start, read here (no proxy answers)."""
    from scalpel_desktop.paths import dirs, home_relative
    from scalpel_desktop.runtime_health import ledger_fix
    from scalpel_desktop.store.ledger_queries import today_savings_or_unknown

    db = dirs().database
    where = home_relative(db)
    if not db.exists():
        return ("ledger", "info", f"no ledger at {where} yet (the proxy starts one with its first request)", "")
    today, error = today_savings_or_unknown(db)
    if today is None:
        return ("ledger", "fail", f"{where} cannot be read ({error}): the proxy would start with recording, "
                "surgery and the tool filter off", ledger_fix(error, db))
    return ("ledger", "ok", f"{where} readable ({today.requests:,} request(s) today)", "")


def print_degraded(items: list[dict], width: int | None) -> None:
    """``status``'s lines for the degraded items (a fix printed once when several items share it)."""
    if not items:
        return
    count = {sev: sum(d.get("severity") == sev for d in items) for sev in ("fail", "warn", "info")}
    words = [f"{count[sev]} {word}" for sev, word in (("fail", "failing"), ("warn", "warning(s)"),
                                                      ("info", "by choice")) if count[sev]]
    print(f"  {'degraded' if count['fail'] or count['warn'] else 'notes':<8}  {', '.join(words)}")
    last_fix = None
    for d in items:
        mark = {"fail": "FAIL", "warn": "warn"}.get(d.get("severity"), "info")
        for line in hanging(f"  {mark}  ", f"{d.get('reason')}", width):
            print(line)
        fix = d.get("fix")
        if fix and fix != last_fix:
            for line in hanging("        fix: ", fix, width):
                print(line)
        last_fix = fix
