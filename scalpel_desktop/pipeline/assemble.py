"""The default pipeline: which stages run, in which order.

The one place that composes stages (like mitmproxy's ``default_addons()``);
the runtime calls ``default_stages``. Order matters:

1. parse-reuse - parses the body once, re-using the previous request's
                 unchanged messages (what keeps a 2.9 MB body within budget)
2. identify    - conversation key, model, size estimate (observes)
3. inventory   - records declared and called tools (observes)
4. tool filter - the opt-in, session-pinned tool removal (mutates)
5. surgery     - cuts dead tool output when the cache makes it free (mutates);
                 works on whatever body the tool filter produced
6. record      - the ledger row, after every other stage has had its say

The bench replays the surgery stage itself (``bench/replay.py``), built the
same way, so its figures are the shipped pipeline's.
"""

from __future__ import annotations

import logging
import sqlite3
from typing import Any, Iterable

from scalpel_desktop.config import Config
from scalpel_desktop.pipeline.identify import Identify
from scalpel_desktop.pipeline.seam import Stage

log = logging.getLogger("scalpel.pipeline")


def default_stages(config: Config, *, ledger: Any = None, db_path: Any = None,
                   spill_dir: Any = None) -> list[Stage]:
    from scalpel_desktop.accounting.prices import PriceTable
    from scalpel_desktop.paths import dirs
    from scalpel_desktop.pipeline.parse_reuse import ParseReuse
    from scalpel_desktop.pipeline.surgery_stage import build_surgery_stage
    from scalpel_desktop.pipeline.tool_filter_stage import tool_stages
    from scalpel_desktop.store.db import connect

    prices = PriceTable.load()
    db_path = db_path or dirs().database
    stages: list[Stage] = [ParseReuse(), Identify()]
    built: list[Any] = []
    try:
        built.extend(tool_stages(config, db_path=db_path, prices=prices))
        built.append(build_surgery_stage(config, connect(db_path), spill_dir or dirs().spill, prices))
    except (sqlite3.Error, OSError) as e:
        # Fail open: the tool filter and the surgery log live in this database. Without
        # it they stay off and every request is forwarded unchanged.
        log.warning("database %s cannot be used (%s): tool filter and surgery are off, "
                    "requests are forwarded unchanged", db_path, e)
        close_stages(built)
    else:
        stages.extend(built)
    if ledger is not None:
        from scalpel_desktop.pipeline.record import LedgerRecorder

        stages.append(LedgerRecorder(ledger))
    return stages


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
    from scalpel_desktop.tools import actions as tool_actions

    tool_actions.register(runtime)
