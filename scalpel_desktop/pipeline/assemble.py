"""The default pipeline: which stages run, in which order.

The one place that composes stages (like mitmproxy's ``default_addons()``);
the runtime calls ``default_stages`` and the bench builds the same list, so
the bench replays exactly the pipeline that ships. Order matters:

1. identify   - conversation key, model, size estimate (observes)
2. (tool filter, surgery: mutating stages, added by their issues)
3. record     - the ledger row, after every other stage has had its say
"""

from __future__ import annotations

from typing import Any

from scalpel_desktop.config import Config
from scalpel_desktop.pipeline.identify import Identify
from scalpel_desktop.pipeline.seam import Stage


def default_stages(config: Config, *, ledger: Any = None) -> list[Stage]:
    stages: list[Stage] = [Identify()]
    if ledger is not None:
        from scalpel_desktop.pipeline.record import LedgerRecorder

        stages.append(LedgerRecorder(ledger))
    return stages


def register_actions(runtime: Any) -> None:
    """Control-API actions contributed by features (tool filter, ...); none yet."""
