"""The one-line status Claude Code shows under its prompt (``statusLine`` setting).

Input: the session JSON Claude Code 2.1.x writes to the command's stdin
(``session_id``, ``model``, ``context_window.current_usage``,
``context_window.context_window_size``, ...; a captured example is in
``tests/service/fixtures/statusline-after-turns.json``). Output, e.g.::

    ctx 15.3k/1M (2%) · cache 99% · scalpel saved 12,400 tok ($0.05) · last replayed · today 48,210 tok ($0.21)

Context size, window and cache share come from Claude Code's own figures of
the last response (what the API billed, after any cut); when absent, from the
ledger's usage counts, and the window from the model table
(``accounting.windows``). "Saved" is the realized saving the ledger recorded for this
session, "last" the decision of its latest request when that request was
changed (``decisions.py``: cut, replayed, filtered, joined by ``+``), "today"
every session's since local midnight: both from the ledger
reader (``store/ledger_queries.py``), the same query as the tray's and the
dashboard's. A ledger that is there and cannot be read (a garbage file, a
folder, a lock) says so ("ledger unreadable, today unknown") instead of
"not routed": its figures are unknown, not absent. Stdlib only (sqlite3),
well under 50 ms, never raises.

When this session's scalpel port refuses a connect (one connect per line:
the session's loopback ``ANTHROPIC_BASE_URL``, else autopilot's port), the
ledger's figures would read as if all were well: the line starts with
"scalpel down" and what to run instead, and with autopilot on it asks the
login service to start the proxy again without waiting for it
(``session_guard.start_proxy_if_needed(port, wait_s=0)``), so a dead proxy
comes back even before the next prompt's hook would start it.
"""

from __future__ import annotations


def _tokens(n: float) -> str:
    if n >= 1_000_000:
        v = n / 1_000_000
        return f"{v:.1f}M".replace(".0M", "M")
    if n >= 1000:
        return f"{n / 1000:.1f}k"
    return str(int(n))


def _int(v) -> int:
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else 0


def context_figures(payload: dict) -> tuple[int | None, int | None, int | None]:
    """(context tokens, window size, cache-read tokens) from Claude Code's input."""
    cw = payload.get("context_window")
    if not isinstance(cw, dict):
        return None, None, None
    window = _int(cw.get("context_window_size")) or None
    cur = cw.get("current_usage")
    if not isinstance(cur, dict):
        return None, window, None
    read = _int(cur.get("cache_read_input_tokens"))
    total = _int(cur.get("input_tokens")) + _int(cur.get("cache_creation_input_tokens")) + read
    return (total or None), window, read


def _ledger_figures(conn, session: str):
    from scalpel_desktop.store.ledger_queries import session_figures, today_savings

    return session_figures(conn, session), today_savings(conn)


def _model_window(payload: dict, ctx: int) -> int | None:
    """The window table's size for the payload's model, when Claude Code did not send its own."""
    model = payload.get("model")
    name = model.get("id") if isinstance(model, dict) else model
    if not isinstance(name, str) or not name:
        return None
    from scalpel_desktop.accounting.windows import context_window

    plain = context_window(name)
    return context_window(name, one_m=ctx > plain)


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def down_notice(env=None) -> str | None:
    """"scalpel down ..." and what to run when this session's scalpel port refuses a connect, else None."""
    import os

    from scalpel_desktop.service import session_guard

    env = os.environ if env is None else env
    port, autopilot_port = session_guard.routed_port(env)
    if port is None or session_guard.listening(port, timeout=0.2):
        return None
    if port != autopilot_port:
        return f"scalpel down: nothing answers at 127.0.0.1:{port}; run `scalpel start` (or `scalpel autopilot on`)"
    result = session_guard.start_proxy_if_needed(port, wait_s=0)
    if result in ("starting", "started", "running"):
        return "scalpel down: restarting it (autopilot); if it stays down, run `scalpel doctor`"
    return f"scalpel down: autopilot could not restart it ({_short(result.removeprefix('failed: '))}); run `scalpel doctor`"


def render(payload: dict, env=None) -> str:
    try:
        down = down_notice(env)
    except Exception:  # noqa: BLE001 - the line never fails
        down = None
    parts: list[str] = [down] if down else []
    ctx, window, read = context_figures(payload)
    session = payload.get("session_id") if isinstance(payload.get("session_id"), str) else ""
    figures = today = None
    unreadable = False  # a ledger is there and cannot be read: its figures are unknown, not "not routed"
    if session:
        try:
            from scalpel_desktop.store.ledger_queries import with_ledger

            failed = (None, None)
            got = with_ledger(failed, _ledger_figures, session)
            figures, today = got
            if got is failed:  # no ledger yet, or one that cannot be read: only the second is news
                from scalpel_desktop.store.ledger_queries import today_savings_or_unknown

                unreadable = today_savings_or_unknown()[0] is None
        except Exception:  # noqa: BLE001
            figures = today = None
    if ctx is None and figures is not None and figures.context_source == "usage" and figures.context_tokens:
        ctx, read = figures.context_tokens, figures.context_cache_read
    if ctx and not window:
        window = _model_window(payload, ctx)
    if ctx:
        if window:
            parts.append(f"ctx {_tokens(ctx)}/{_tokens(window)} ({round(100 * ctx / window)}%)")
        else:
            parts.append(f"ctx {_tokens(ctx)}")
        if read is not None:
            parts.append(f"cache {round(100 * read / ctx)}%")
    else:
        parts.append("ctx -")
    if down:
        pass  # the ledger's figures would hide that nothing answers now
    elif figures is not None and figures.requests:
        parts.append(f"scalpel saved {figures.realized_tokens:,} tok (${figures.realized_usd:,.2f})")
        from scalpel_desktop.decisions import is_change

        if is_change(figures.last_decision):  # what the last request's bytes show (cut, replayed, filtered)
            parts.append(f"last {figures.last_decision}")
        if today is not None:
            parts.append(f"today {today.tokens:,} tok (${today.usd:,.2f})")
    elif unreadable:
        parts.append("scalpel: ledger unreadable, today unknown (scalpel doctor)")
    else:
        parts.append("scalpel: not routed")
    return " · ".join(parts)
