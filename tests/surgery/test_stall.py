"""The surgery stage never waits on a locked ledger or a full disk, and never cuts without its spill.

The stage as the proxy builds it (``build_surgery_stage``: writes bounded by
``write_wait_ms``). A conversation is warmed up, then comes back past its TTL
with superseded reads worth a batch: a cut is due. With another process
holding an exclusive transaction on the ledger, the cut log cannot take it:
the request goes out without the new cut (replayed stubs kept), and nothing
is logged later. With the spill dir on a full tmpfs, no spill lands: no cut,
the request goes out as it came.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from scalpel_desktop.accounting.prices import PriceTable
from scalpel_desktop.exchange import ApiRequest, Exchange, ResponseResult
from scalpel_desktop.pipeline.chain import Chain
from scalpel_desktop.pipeline.identify import Identify
from scalpel_desktop.pipeline.parse_reuse import ParseReuse
from scalpel_desktop.store.cutlog import CutLog
from scalpel_desktop.store.db import connect
from scalpel_desktop.surgery.doom import is_stub
from scalpel_desktop.surgery.stage import build_surgery_stage
from scalpel_desktop.surgery.testing import SessionBuilder, file_text
from scalpel_desktop.wire.formats import view_for
from scalpel_desktop.wire.jsoncodec import dumps, loads
from scalpel_desktop.wire.usage import Usage
from tests.support.db_lock import exclusive_lock

HEADERS = {"anthropic-version": "2023-06-01", "x-claude-code-session-id": "00000000-0000-4000-8000-0000000000aa"}


class Conversation:
    def __init__(self, tmp: Path, spill_dir: Path, write_wait_ms: int = 3000):
        self.db = tmp / "ledger.sqlite3"
        # A generous write budget by default: an fsynced spill on a busy test machine may take more
        # than the shipped 50 ms, and these tests are about what is decided, not how long it took.
        self.stage = build_surgery_stage({"policy": "cold", "tier": 2, "write_wait_ms": write_wait_ms},
                                         connect(self.db), spill_dir, PriceTable.builtin())
        self.chain = Chain([ParseReuse(min_bytes=0), Identify(), self.stage])
        self.s = SessionBuilder(session_id=HEADERS["x-claude-code-session-id"])
        self.t = 1_000_000.0
        self.n = 0
        self.turn()

    def turn(self, past_ttl: bool = False) -> tuple[bytes, Exchange]:
        """Three files read then edited (their reads superseded: a batch worth cutting), one more read."""
        for j in range(3):
            path = f"/home/user/proj/f{self.n}_{j}.py"
            self.s.call("Read", {"file_path": path}, file_text(path, 200))
            self.s.call("Edit", {"file_path": path, "old_string": "a", "new_string": "b"}, "updated")
        self.s.call("Read", {"file_path": f"/home/user/proj/last{self.n}.py"}, file_text("x", 20))
        self.n += 1
        self.t += 4000 if past_ttl else 20
        body = dumps(self.s.body())
        ex = self.chain.process(ApiRequest("POST", "/v1/messages", "", "anthropic", "messages", HEADERS, body,
                                           self.t))
        self.chain.complete(ex, ResponseResult(200, Usage(cache_read=1000), 1, 1, self.t + 2))
        return body, ex

    def logged(self) -> int:
        self.stage.cutlog.flush(30)
        return CutLog(connect(self.db)).count()


def _stubs(ex: Exchange) -> set[str]:
    return {r.id for r in view_for("messages", loads(ex.body_to_send())).tool_results if is_stub(r.content)}


def test_a_locked_ledger_sends_no_new_cut_keeps_the_replays_and_logs_nothing_later(tmp_path):
    conv = Conversation(tmp_path, tmp_path / "spill")
    _, first_cut = conv.turn(past_ttl=True)
    assert "cut" in first_cut.decision.changes, first_cut.decision.reason
    replayed = _stubs(first_cut)
    assert replayed and conv.logged() == len(replayed)
    with exclusive_lock(conv.db):
        body, ex = conv.turn(past_ttl=True)  # new cuts are due: the log cannot take them in time
        assert "cut" not in ex.decision.changes and "surgeon could not cut" in ex.decision.reason
        assert _stubs(ex) == replayed  # the earlier cuts still replayed, byte for byte; nothing new
        assert ex.body_to_send() != body
        assert ex.decision.figures["replayed"] == len(replayed)
    assert conv.logged() == len(replayed)  # the withdrawn cuts left no row behind
    _, after = conv.turn(past_ttl=True)  # the lock gone: the due cuts are made and logged
    assert "cut" in after.decision.changes and _stubs(after) > replayed
    assert conv.logged() == len(_stubs(after))


@pytest.fixture
def full_tmpfs(tmp_path):
    """A 64 KB tmpfs, filled to the last byte; unmounted afterwards."""
    where = tmp_path / "spill"
    where.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(where)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        why = f"cannot mount a tmpfs here ({proc.stderr.strip() or proc.returncode})"
        if os.environ.get("CI") == "true" and hasattr(os, "geteuid") and os.geteuid() == 0:
            pytest.fail(f"{why}: this platform runs the tests as root and should allow it")
        pytest.skip(why)
    try:
        try:
            with open(where / "filler", "wb") as f:
                while True:
                    f.write(b"\0" * 4096)
                    f.flush()
        except OSError:
            pass
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


def test_a_full_spill_dir_means_no_cut_and_the_request_goes_out(tmp_path, full_tmpfs):
    conv = Conversation(tmp_path, full_tmpfs)
    body, ex = conv.turn(past_ttl=True)
    assert "cut" not in ex.decision.changes and "surgeon could not cut" in ex.decision.reason  # a cut was due
    assert ex.body_to_send() == body and _stubs(ex) == set()  # forwarded as it came
    assert conv.logged() == 0
    assert conv.stage.spill.ls() == []  # not one spill file landed


def test_a_spill_that_does_not_land_within_the_bound_means_no_cut(tmp_path):
    """A slow disk (the spill blocked until the test lets it go): the request does not wait for it,
    goes out as it came, and the spill that lands later leaves no cut behind."""
    import threading

    conv = Conversation(tmp_path, tmp_path / "spill", write_wait_ms=50)
    gate = threading.Event()
    real = conv.stage.spill.put_many

    def slow(contents):
        gate.wait(30)
        return real(contents)

    conv.stage.spill.put_many = slow
    try:
        body, ex = conv.turn(past_ttl=True)
        assert "cut" not in ex.decision.changes and "surgeon could not cut" in ex.decision.reason
        assert ex.body_to_send() == body and _stubs(ex) == set()
    finally:
        gate.set()
    assert conv.stage.surgeon.spill_worker.flush(30)
    assert conv.logged() == 0  # the spill landed late; its cut was never made
    assert conv.stage.spill.ls()  # ... and the files are there, harmless (content-addressed)
