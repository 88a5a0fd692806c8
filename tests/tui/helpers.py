"""Shared bits of the dashboard tests: settle workers, read what a screen shows, expected figures."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from textual.widgets import DataTable, Static

from tests.tui.seed import Seed

PANES = ("sessions", "savings", "decisions", "tools", "settings", "usage", "misses")
CONVERSATION = ("messages", "chat", "responses")


async def settle(pilot: Any, rounds: int = 3) -> None:
    """Let every worker finish and every posted message be handled."""
    from textual.worker import WorkerCancelled

    for _ in range(rounds):
        try:
            await pilot.app.workers.wait_for_complete()
        except WorkerCancelled:  # an exclusive worker replaced by a newer one
            pass
        await pilot.pause()


async def open_tab(pilot: Any, pane: str) -> None:
    """Switch to ``pane`` by its number key, as a user does, and let it load."""
    await pilot.press(str(PANES.index(pane) + 1))
    await settle(pilot)


async def wait_until(pilot: Any, predicate, timeout_s: float = 10.0) -> bool:
    import time

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        await pilot.pause(0.05)
    return predicate()


def text_of(app: Any, selector: str) -> str:
    return str(app.query_one(selector, Static).content)


def row_text(app: Any, table: str, key: str) -> list[str]:
    return [str(c) for c in app.query_one(table, DataTable).get_row(key)]


def row_keys(app: Any, table: str) -> list[str]:
    t = app.query_one(table, DataTable)
    return [t.coordinate_to_cell_key((i, 0)).row_key.value for i in range(t.row_count)]


# -- expected figures, computed from the seeded rows alone ---------------------------------


def prompt_of(r: dict) -> int | None:
    if r["input_tokens"] is None and r["cache_read"] is None:
        return None
    return sum(r[k] or 0 for k in ("input_tokens", "cache_write_5m", "cache_write_1h", "cache_read"))


def expected_session(seed: Seed, session: str) -> dict[str, Any]:
    rows = [r for r in seed.requests if r["session"] == session and r["endpoint"] in CONVERSATION
            and r["ts"] <= seed.now]
    rows.sort(key=lambda r: r["ts"])
    main = [r for r in rows if not r["agent"]]
    latest = main[-1]
    with_usage = [r for r in rows if prompt_of(r) is not None][-10:]
    return {
        "turns": len(main),
        "context": prompt_of(latest),
        "share": prompt_of(latest) / 200_000,  # every seeded model is a Claude model with a 200k window
        "cache": sum(r["cache_read"] or 0 for r in with_usage) / sum(prompt_of(r) for r in with_usage),
        "realized": sum(r["realized_tokens"] or 0 for r in rows),
    }


def listed_sessions(seed: Seed) -> list[str]:
    last: dict[str, float] = {}
    for r in seed.requests:
        if r["endpoint"] in CONVERSATION and seed.now - 86400 <= r["ts"] <= seed.now:
            last[r["session"]] = max(last.get(r["session"], 0.0), r["ts"])
    return sorted(last, key=lambda s: -last[s])


def period_start(now: float, days: int) -> float:
    midnight = datetime.fromtimestamp(now).replace(hour=0, minute=0, second=0, microsecond=0)
    return (midnight - timedelta(days=days - 1)).timestamp()


def expected_realized(seed: Seed, days: int) -> tuple[int, float]:
    start = period_start(seed.now, days)
    rows = [r for r in seed.requests if start <= r["ts"] <= seed.now]
    return (sum(r["realized_tokens"] or 0 for r in rows), sum(r["realized_usd"] or 0.0 for r in rows))


def expected_misses(seed: Seed, days: int) -> dict[str, Any]:
    """The misses of the last ``days`` local days from the seeded rows alone: totals, by cause
    ({cause: (count, tokens, cost)}) and by session ({session: (count, cost, main cause)}), and the
    period's bill (its requests' usage counts at the price table)."""
    from scalpel_desktop.accounting.prices import PriceTable
    from scalpel_desktop.wire.usage import Usage

    start = period_start(seed.now, days)
    rows = [r for r in seed.requests if r.get("miss_cause") and start <= r["ts"] <= seed.now]
    causes: dict[str, list] = {}
    sessions: dict[str, dict[str, list]] = {}
    for r in rows:
        causes.setdefault(r["miss_cause"], []).append(r)
        sessions.setdefault(r["session"], {}).setdefault(r["miss_cause"], []).append(r)
    by_cause = {c: (len(rs), sum(r["miss_tokens"] for r in rs), sum(r["miss_usd"] for r in rs))
                for c, rs in causes.items()}
    by_session = {}
    for s, per in sessions.items():
        main = max(per, key=lambda c: (sum(r["miss_usd"] for r in per[c]), len(per[c])))
        by_session[s] = (sum(len(rs) for rs in per.values()), sum(r["miss_usd"] for rs in per.values() for r in rs),
                         main)
    prices = PriceTable.load()
    bill = sum(prices.rates(r["model"]).cost(Usage(r["input_tokens"] or 0, r["cache_write_5m"] or 0,
                                                   r["cache_write_1h"] or 0, r["cache_read"] or 0,
                                                   r["output_tokens"] or 0))
               for r in seed.requests if r["endpoint"] in CONVERSATION and start <= r["ts"] <= seed.now
               and any(r[k] is not None for k in ("input_tokens", "cache_read", "output_tokens")))
    return {"count": len(rows), "tokens": sum(r["miss_tokens"] for r in rows),
            "cost": sum(r["miss_usd"] for r in rows), "by_cause": by_cause, "by_session": by_session,
            "bill": bill}


def session_miss_cost(seed: Seed, session: str) -> tuple[int, float]:
    """(misses, their cost) of every seeded request of ``session`` up to the seed's now."""
    rows = [r for r in seed.requests if r["session"] == session and r.get("miss_cause") and r["ts"] <= seed.now]
    return len(rows), sum(r["miss_usd"] for r in rows)


# -- a bare app around one view or widget, for a module's own pilot tests ---------------------
def host(make: Any, css: str = "") -> Any:
    """An App that composes ``make()`` alone and records the dashboard messages posted to it
    (``app.posted``), as the real app would receive them."""
    from textual.app import App

    from scalpel_desktop.tui.messages import ControlRequested, ReloadRequested

    class Host(App):
        CSS = css

        def __init__(self) -> None:
            super().__init__()
            self.posted: list = []

        def compose(self):
            yield make()

        def on_control_requested(self, message: ControlRequested) -> None:
            self.posted.append(message)

        def on_reload_requested(self, message: ReloadRequested) -> None:
            self.posted.append(message)

    return Host()
