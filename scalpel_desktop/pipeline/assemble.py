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
from scalpel_desktop.service import autopilot
from scalpel_desktop.store.db import connect
from scalpel_desktop.surgery.stage import build_surgery_stage
from scalpel_desktop.tools import actions as tool_actions
from scalpel_desktop.tools.filter_stage import tool_stages
from scalpel_desktop.wire.held import MB

log = logging.getLogger("scalpel.pipeline")


def feature_stages(settings: Any, db_path: Any, spill_dir: Any, prices: PriceTable) -> list[Stage]:
    """The stages that keep their state in the database (the tool store, the surgery log): the
    inventory, the tool filter, surgery. Raises ``sqlite3.Error`` / ``OSError`` when it cannot be used."""
    inventory, tool_filter = tool_stages(settings, db_path=db_path, prices=prices)
    try:
        surgery = build_surgery_stage(settings, connect(db_path), spill_dir, prices)
        surgery.economist.resumes.route_since = autopilot.route_since  # (surgery/resume.py: a certain break)
    except BaseException:
        close_stages([inventory, tool_filter])
        raise
    return [inventory, tool_filter, surgery]


def default_stages(settings: Any, *, ledger: Any = None, db_path: Any = None,
                   spill_dir: Any = None, prices: PriceTable | None = None,
                   on_features_off: Callable[[str], None] | None = None,
                   features_later: Any = None) -> list[Stage]:
    """``on_features_off(why)`` is told when the database cannot be used and the tool filter and
    surgery are left out (the runtime's status says so, not only the log). ``features_later`` (the
    runtime's ``LateFeatures``) builds them instead, off the start path: they are in the list when
    built within its ``wait_s``, else put into the running chain once built (``install_features``)."""
    if prices is None:
        prices = PriceTable.load()
    db_path = db_path or dirs().database
    spill_dir = spill_dir or dirs().spill

    def build() -> list[Stage]:
        return feature_stages(settings, db_path, spill_dir, prices)

    if features_later is not None:
        features: list[Stage] = features_later.first(build) or []
    else:
        try:
            features = build()
        except (sqlite3.Error, OSError) as e:
            # Fail open: without the database the tool filter and surgery stay off and
            # every request is forwarded unchanged.
            log.warning("database %s cannot be used (%s): tool filter and surgery are off, "
                        "requests are forwarded unchanged", db_path, e)
            features = []
            if on_features_off is not None:
                on_features_off(f"{type(e).__name__}: {e}")
    return [
        ParseReuse(budget=lambda: int(setting(settings, "parse_reuse_mb")) * MB, borrow=_borrow(features)),
        Identify(),
        Calibrate(),
        *features,
        *([LedgerRecorder(ledger, prices)] if ledger is not None else []),
    ]


def install_features(chain: Any, features: list[Stage]) -> None:
    """Put feature stages built late into a running chain, where ``default_stages`` puts them."""
    chain.add_stages(features, before="record")
    parse_reuse = chain.get("parse-reuse")
    if parse_reuse is not None and parse_reuse.borrow is None:
        parse_reuse.borrow = _borrow(features)


def _borrow(features: list[Stage]) -> Any:
    """A body parse-reuse forgot, the surgery memo may still hold parsed."""
    surgery = next((s for s in features if getattr(s, "name", None) == "surgery"), None)
    return surgery.memo.snapshots if surgery is not None else None


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
