"""The invariants end to end: the real proxy (runtime) in front of the real emulator server.

* one generated agent session sent over HTTP twice - through the proxy, and
  straight to a second emulator - with the shared test clock
  (``SCALPEL_TEST_CLOCK_FILE``) moved to each request's time: the proxied bill
  is never higher and, since the session has idle gaps past the TTL holding
  dead output, strictly lower;
* REAL CLIENT: a real Claude Code 2.1.332 session through the proxy, then an
  idle gap past the TTL (the clock file moved for the proxy and the emulator),
  then ``--resume``: superseded reads are cut, Claude Code carries on without
  error, and the emulator's bill for the resumed turns is lower than the same
  scenario's without the proxy.
"""

from __future__ import annotations

import random
import time
import urllib.request
from pathlib import Path

import pytest

from scalpel_desktop import clock
from scalpel_desktop.accounting.prices import PriceTable
from scalpel_desktop.config import Config
from scalpel_desktop.emulator.testing import running_emulator
from scalpel_desktop.pipeline import assemble
from scalpel_desktop.pipeline.identify import Identify
from scalpel_desktop.pipeline.parse_reuse import ParseReuse
from scalpel_desktop.surgery.stage import build_surgery_stage
from scalpel_desktop.runtime import Runtime
from scalpel_desktop.store.db import connect
from scalpel_desktop.surgery.doom import is_stub
from scalpel_desktop.wire.jsoncodec import dumps
from scalpel_desktop.wire.formats import view_for

from tests.invariants.agent_sessions import generate
from tests.invariants.test_cost import reaches_a_free_batch

PRICES = PriceTable.builtin()


@pytest.fixture
def clock_file(tmp_path, monkeypatch):
    path = tmp_path / "clock"
    clock.set_offset(path, 0)
    monkeypatch.setenv("SCALPEL_TEST_CLOCK_FILE", str(path))
    return path


@pytest.fixture
def surgery_pipeline(tmp_path, monkeypatch):
    """The runtime's pipeline with the surgery stage wired in (as the lead wires it)."""
    stages = []

    def default_stages(config, *, ledger=None, **kw):
        surgery = build_surgery_stage(config, connect(tmp_path / "surgery.db"), tmp_path / "spill", PRICES)
        stages.append(surgery)
        orig_request, orig_response = surgery.on_request, surgery.on_response

        def on_request(ex):
            orig_request(ex)
            surgery.decisions.append(ex.decision)

        def on_response(ex):
            orig_response(ex)
            surgery.completed += 1

        surgery.decisions, surgery.completed = [], 0
        surgery.on_request, surgery.on_response = on_request, on_response
        return [ParseReuse(), Identify(), surgery]

    monkeypatch.setattr(assemble, "default_stages", default_stages)
    return stages


def _settle(stage, n: int) -> None:
    """The proxy answers before its pipeline hears the response's end: wait for it, so
    an instant clock jump does not overtake it (in real life the idle time passes)."""
    deadline = time.monotonic() + 10
    while stage.completed < n and time.monotonic() < deadline:
        time.sleep(0.002)


def _post(url: str, body: bytes, headers: dict) -> None:
    req = urllib.request.Request(url + "/v1/messages?beta=true", data=body, method="POST",
                                 headers={**headers, "x-api-key": "sk-ant-test"})
    with urllib.request.urlopen(req, timeout=60) as resp:
        resp.read()


def _cost(emu, model_of: list[str]) -> float:
    return sum(PRICES.rates(m).cost(u) for m, u in zip(model_of, emu.bills))


def test_end_to_end_session_through_proxy_and_emulator(clock_file, surgery_pipeline):
    session = generate(random.Random(7), main_turns=40)
    assert reaches_a_free_batch(session)
    with running_emulator("text") as proxied_emu, running_emulator("text") as direct_emu:
        rt = Runtime(Config.load(), {"anthropic_upstream": proxied_emu.url, "policy": "cold"}, port=0).start()
        try:
            proxy_url = f"http://127.0.0.1:{rt.port}"
            for i, req in enumerate(session.requests):
                clock.set_offset(clock_file, req.at - time.time())
                raw = dumps(req.body)
                _post(direct_emu.url, raw, req.headers)
                _post(proxy_url, raw, req.headers)
                _settle(surgery_pipeline[0], i + 1)
        finally:
            rt.stop()
        models = [r.model for r in session.requests]
        assert len(proxied_emu.bills) == len(direct_emu.bills) == len(session.requests)
        assert all(r.status == 200 for r in proxied_emu.api_requests)  # every body the emulator accepted
        direct, proxied = _cost(direct_emu, models), _cost(proxied_emu, models)
        assert proxied < direct, (proxied, direct)
        for d, p in zip(direct_emu.bills, proxied_emu.bills):
            assert p.cache_read >= d.cache_read * 0.5 or d.cache_read == 0
        cut = [r for r in proxied_emu.api_requests
               if any(is_stub(x.content) for x in view_for("messages", r.json()).tool_results)]
        assert cut, "the proxy never sent a stub"


def _big_workdir(wd: Path) -> Path:
    from scalpel_desktop.emulator.scripts import prepare_workdir

    prepare_workdir(wd)
    notes = wd / "notes.txt"
    filler = "".join(f"Background paragraph {i}: the greeting module prints a friendly message to the user.\n"
                     for i in range(160))
    notes.write_text(notes.read_text() + filler)
    return wd


def _scenario(tmp: Path, clock_file: Path, through_proxy: bool, stage=None) -> tuple[list, list, str]:
    """Main session, an idle gap past the TTL, then --resume. Returns (bills of the
    resumed turns, their request bodies, the final result text)."""
    from scalpel_desktop.emulator.scripts import RESUME_TEXT, claude_code_session
    from tests.support.claude_cli import run_claude

    wd = _big_workdir(tmp / "proj")
    with running_emulator(claude_code_session(wd)) as emu:
        rt = None
        url = emu.url
        if through_proxy:
            rt = Runtime(Config.load(), {"anthropic_upstream": emu.url, "policy": "cold"}, port=0).start()
            url = f"http://127.0.0.1:{rt.port}"
        try:
            clock.set_offset(clock_file, 0)
            rc, res, out, err = run_claude(url, wd, "Look at notes.txt and fix the TODO.")
            assert rc == 0 and res and not res["is_error"], (out[-1500:], err[-1500:])
            if stage is not None:
                _settle(stage, len(stage.decisions))
            clock.set_offset(clock_file, 2 * 3600)  # idle past any TTL, for proxy and emulator
            before = len(emu.received)
            rc, res2, out, err = run_claude(url, wd, "Check notes.txt again.", resume=res["session_id"])
            assert rc == 0 and res2 and not res2["is_error"], (out[-1500:], err[-1500:])
            assert res2["result"] == RESUME_TEXT
            resumed = [r for r in emu.received[before:] if r.endpoint == "messages" and r.track == "resume"]
            assert resumed and all(r.status == 200 for r in resumed)
            return [r.usage for r in resumed], [r.json() for r in resumed], res2["result"]
        finally:
            if rt is not None:
                rt.stop()


@pytest.mark.claude_cli
def test_real_claude_code_resumed_after_the_ttl_is_cut_and_cheaper(tmp_path, clock_file, surgery_pipeline):
    from tests.support import claude_bin

    claude_bin()
    direct_bills, _, _ = _scenario(tmp_path / "direct", clock_file, through_proxy=False)
    proxied_bills, proxied_bodies, _ = _scenario(tmp_path / "proxied", clock_file, through_proxy=True,
                                                 stage=_StageRef(surgery_pipeline))
    # Superseded reads are cut in what the emulator received.
    first = view_for("messages", proxied_bodies[0])
    stubs = [r for r in first.tool_results if is_stub(r.content)]
    assert stubs and all(r.name == "Read" and "superseded read" in r.text for r in stubs)
    model = proxied_bodies[0]["model"]
    rates = PRICES.rates(model)
    direct = sum(rates.cost(u) for u in direct_bills)
    proxied = sum(rates.cost(u) for u in proxied_bills)
    assert proxied < direct, (proxied, direct)


class _StageRef:
    """The surgery stage the runtime builds when it starts (after this object exists)."""

    def __init__(self, built: list):
        self.built = built

    @property
    def decisions(self) -> list:
        return self.built[-1].decisions if self.built else []

    @property
    def completed(self) -> int:
        return self.built[-1].completed if self.built else 0
