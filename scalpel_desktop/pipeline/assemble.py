"""The default pipeline: which stages run, in which order.

The one place that composes stages, as one flat list (like mitmproxy's
``default_addons()``); the runtime calls ``default_stages``. Order matters:

1. parse-reuse - parses the body once, re-using the previous request's
                 unchanged messages (what keeps a 2.9 MB body within budget)
2. identify    - conversation key, model, size estimate (observes)
   calibrate   - on each answer, the conversation's tokens per byte from its
                 usage counts (observes; before the stages that price savings)
3. inventory   - records declared and called tools (observes; ``tools/``)
4. tool filter - the opt-in, session-pinned tool removal (mutates; ``tools/``)
5. surgery     - cuts dead tool output when the cache makes it free (mutates;
                 ``surgery/``); works on whatever body the tool filter produced
6. record      - the ledger row, after every other stage has had its say

``settings`` is the runtime's layered settings object (or a ``Config``, or a
mapping); ``prices`` the one price table, loaded by the caller. The bench
replays the surgery stage itself (``bench/replay.py``), built the same way,
so its figures are the shipped pipeline's.
"""

from __future__ import annotations

import logging
import sqlite3
from typing import Any, Callable, Iterable

from scalpel_desktop.accounting.prices import PriceTable
from scalpel_desktop.config import setting
from scalpel_desktop.exchange import Stage
from scalpel_desktop.paths import dirs
from scalpel_desktop.pipeline.calibrate import Calibrate
from scalpel_desktop.pipeline.identify import Identify
from scalpel_desktop.pipeline.parse_reuse import ParseReuse
from scalpel_desktop.pipeline.record import LedgerRecorder
from scalpel_desktop.store.db import connect
from scalpel_desktop.surgery.stage import build_surgery_stage
from scalpel_desktop.tools import actions as tool_actions
from scalpel_desktop.tools.filter_stage import tool_stages
from scalpel_desktop.wire.held import MB

log = logging.getLogger("scalpel.pipeline")


def default_stages(settings: Any, *, ledger: Any = None, db_path: Any = None,
                   spill_dir: Any = None, prices: PriceTable | None = None,
                   on_features_off: Callable[[str], None] | None = None) -> list[Stage]:
    """``on_features_off(why)`` is told when the database cannot be used and the tool filter and
    surgery are left out (the runtime's status says so, not only the log)."""
    if prices is None:
        prices = PriceTable.load()
    db_path = db_path or dirs().database
    try:
        # The tool filter and the surgery log live in the database.
        inventory, tool_filter = tool_stages(settings, db_path=db_path, prices=prices)
        try:
            surgery = build_surgery_stage(settings, connect(db_path), spill_dir or dirs().spill, prices)
        except BaseException:
            close_stages([inventory, tool_filter])
            raise
        features: list[Stage] = [inventory, tool_filter, surgery]
        borrow = surgery.memo.snapshots  # a body parse-reuse forgot, the memo may still hold parsed
    except (sqlite3.Error, OSError) as e:
        # Fail open: without the database the tool filter and surgery stay off and
        # every request is forwarded unchanged.
        log.warning("database %s cannot be used (%s): tool filter and surgery are off, "
                    "requests are forwarded unchanged", db_path, e)
        features, borrow = [], None
        if on_features_off is not None:
            on_features_off(f"{type(e).__name__}: {e}")
    return [
        ParseReuse(budget=lambda: int(setting(settings, "parse_reuse_mb")) * MB, borrow=borrow),
        Identify(),
        Calibrate(),
        *features,
        *([LedgerRecorder(ledger)] if ledger is not None else []),
    ]


def close_stages(stages: Iterable[Any]) -> None:
    """Flush and close what stages hold (background writers, connections)."""
    for stage in stages:
        close = getattr(stage, "close", None)
        if callable(close):
            try:
                close()
            except Exception:  # noqa: BLE001 - closing must not stop the others
                log.exception("closing stage %s failed", getattr(stage, "name", stage))


def register_actions(runtime: Any) -> None:
    """Control-API actions contributed by features."""
    tool_actions.register(runtime)
