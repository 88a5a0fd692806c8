"""The composer: which stages ship, in which order, and failing open without a database."""

from __future__ import annotations

import logging

from scalpel_desktop.accounting.prices import PriceTable
from scalpel_desktop.config import Config
from scalpel_desktop.exchange import ApiRequest
from scalpel_desktop.pipeline import assemble
from scalpel_desktop.pipeline.chain import Chain
from scalpel_desktop.wire.jsoncodec import dumps

PRICES = PriceTable.builtin()


class Rows:
    def __init__(self):
        self.rows = []

    def submit(self, row):
        self.rows.append(row)


def names(stages):
    return [s.name for s in stages]


def test_the_shipped_order(tmp_path):
    stages = assemble.default_stages(Config.load(), ledger=Rows(), db_path=tmp_path / "l.sqlite3",
                                     spill_dir=tmp_path / "spill", prices=PRICES)
    try:
        assert names(stages) == ["parse-reuse", "identify", "calibrate", "inventory", "tool_filter", "surgery", "record"]
        # only the tool filter and the surgery may change a body
        assert [s.name for s in stages if s.mutates] == ["tool_filter", "surgery"]
    finally:
        assemble.close_stages(stages)


def test_no_ledger_no_recorder(tmp_path):
    stages = assemble.default_stages(Config.load(), db_path=tmp_path / "l.sqlite3", spill_dir=tmp_path / "s",
                                     prices=PRICES)
    try:
        assert names(stages)[-1] == "surgery"
    finally:
        assemble.close_stages(stages)


def test_without_a_usable_database_requests_pass_unchanged_and_are_still_recorded(tmp_path, caplog):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    ledger = Rows()
    told: list[str] = []
    with caplog.at_level(logging.WARNING, logger="scalpel.pipeline"):
        stages = assemble.default_stages(Config.load(), ledger=ledger, db_path=blocker / "l.sqlite3",
                                         spill_dir=tmp_path / "s", prices=PRICES, on_features_off=told.append)
    assert names(stages) == ["parse-reuse", "identify", "calibrate", "record"]
    assert "tool filter and surgery are off" in caplog.text and str(blocker / "l.sqlite3") in caplog.text
    assert len(told) == 1 and told[0].split(": ", 1)[1] in caplog.text  # the runtime's status says the log's why
    body = dumps({"model": "claude-sonnet-4-5", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]})
    ex = Chain(stages).process(ApiRequest("POST", "/v1/messages", "", "anthropic", "messages", {}, body, 0.0))
    assert ex.body_to_send() == body and ex.model == "claude-sonnet-4-5"


class Closable:
    def __init__(self, name, log, fail=False):
        self.name, self.log, self.fail = name, log, fail

    def close(self):
        self.log.append(self.name)
        if self.fail:
            raise RuntimeError("flush failed")


def test_close_stages_closes_every_stage_even_after_one_fails(caplog):
    log: list[str] = []
    with caplog.at_level(logging.ERROR, logger="scalpel.pipeline"):
        assemble.close_stages([Closable("a", log, fail=True), object(), Closable("b", log)])
    assert log == ["a", "b"]
    assert "closing stage a failed" in caplog.text


def test_features_register_their_control_actions():
    class Runtime:
        def __init__(self):
            self.actions = {}

        def register_action(self, name, handler):
            self.actions[name] = handler

    rt = Runtime()
    assemble.register_actions(rt)
    assert set(rt.actions) == {"tools"} and callable(rt.actions["tools"])
