"""Send one generated session twice - directly and through the pipeline - and bill both.

Billing uses ``accounting/cache_model.py`` in-process: the very model the
emulated upstream serves with, so a figure here is what the emulator would
bill. Each arm has its own cache; the cache key is the model (Anthropic's
cache is per model). ``variant`` picks a reading of the two undocumented
behaviours (``PromptCache.variant``: the lookback, what a hit refreshes);
``VARIANTS`` is every combination the property tests run under.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scalpel_desktop.accounting.cache_model import (
    LOOKBACK_VARIANTS,
    REFRESH_READINGS,
    PromptCache,
    min_cacheable_for,
    request_blocks,
)
from scalpel_desktop.accounting.prices import PriceTable
from scalpel_desktop.pipeline.chain import Chain
from scalpel_desktop.pipeline.identify import Identify
from scalpel_desktop.exchange import ApiRequest, Exchange, ResponseResult
from scalpel_desktop.surgery.stage import SurgeryStage
from scalpel_desktop.store.db import connect
from scalpel_desktop.store.spill import SpillStore
from scalpel_desktop.store.cutlog import CutLog
from scalpel_desktop.surgery.economist import Economist
from scalpel_desktop.wire.jsoncodec import dumps, loads

from tests.invariants.agent_sessions import Request, Session

PRICES = PriceTable.builtin()
VARIANTS = tuple(f"lookback={lb},refresh={r}" for lb in LOOKBACK_VARIANTS for r in REFRESH_READINGS)
SHIPPED_POLICIES = ("cold", "death", "payback")


@dataclass
class Arm:
    cache: PromptCache = field(default_factory=PromptCache)
    cost: float = 0.0
    bills: list = field(default_factory=list)

    def bill(self, req: Request, body: dict) -> Any:
        bill = self.cache.bill_detail(req.model, request_blocks(body), req.at,
                                      min_cacheable=min_cacheable_for(req.model))
        self.bills.append(bill)
        self.cost += PRICES.rates(req.model).cost(bill.usage)
        return bill


class Pipeline:
    """The surgery pipeline as the proxy runs it, on a temp DB and spill dir."""

    def __init__(self, config: dict, root: Path):
        self.config = config
        self.root = root
        self.db_path = root / "ledger.db"
        self.spill = SpillStore(root / "spill")
        self.restart()

    def restart(self) -> None:
        """A new stage and a new CutLog on the same DB: what a proxy restart does."""
        self.conn = connect(self.db_path)
        self.cutlog = CutLog(self.conn)
        self.stage = SurgeryStage(self.config, self.spill, self.cutlog, Economist(self.config, PRICES), PRICES)
        self.chain = Chain([Identify(), self.stage])

    def process(self, req: Request) -> Exchange:
        raw = dumps(req.body)
        api = ApiRequest("POST", "/v1/messages", "beta=true", "anthropic", "messages",
                         {k.lower(): v for k, v in req.headers.items()}, raw, req.at)
        return self.chain.process(api)

    def complete(self, ex: Exchange, req: Request, usage: Any) -> None:
        self.chain.complete(ex, ResponseResult(200, usage, 500.0, (req.end - req.at) * 1000, req.end))


@dataclass
class Run:
    direct: Arm
    proxied: Arm
    exchanges: list[Exchange]
    sent: list[dict]


def run_session(session: Session, config: dict, root: Path | None = None, restart_at: int | None = None,
                variant: str = "") -> Run:
    tmp = None
    if root is None:
        tmp = tempfile.TemporaryDirectory()
        root = Path(tmp.name)
    try:
        pipe = Pipeline(config, root)
        direct, proxied = Arm(PromptCache.variant(variant)), Arm(PromptCache.variant(variant))
        exchanges, sent = [], []
        for i, req in enumerate(session.requests):
            if restart_at is not None and i == restart_at:
                pipe.restart()
            direct.bill(req, req.body)
            ex = pipe.process(req)
            body = loads(ex.body_to_send())
            bill = proxied.bill(req, body)
            pipe.complete(ex, req, bill.usage)
            exchanges.append(ex)
            sent.append(body)
        return Run(direct, proxied, exchanges, sent)
    finally:
        if tmp is not None:
            tmp.cleanup()


COLD = {"policy": "cold", "tier": 2}
