"""Over the wire: a conversation the memo could not keep goes out before its analysis with its cuts
spliced back in, and the emulated API (the judge) takes it (surgery/ghost.py, pipeline/lane.py)."""

from __future__ import annotations

import http.client
import json
import sqlite3

from scalpel_desktop import clock
from scalpel_desktop.config import Config
from scalpel_desktop.emulator.testing import running_emulator
from scalpel_desktop.paths import dirs
from scalpel_desktop.runtime import Runtime
from scalpel_desktop.surgery.doom import STUB_MARK
from scalpel_desktop.surgery.testing import SessionBuilder, file_text
from scalpel_desktop.wire.jsoncodec import dumps
from tests.proxy.conftest import wait_for

SID = "00000000-0000-4000-8000-0000000000d1"


def _post(port: int, body: bytes) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("POST", "/v1/messages", body=body,
                 headers={"content-type": "application/json", "x-api-key": "sk-ant-test",
                          "anthropic-version": "2023-06-01", "x-claude-code-session-id": SID})
    resp = conn.getresponse()
    resp.read()
    return resp.status


def _recorded() -> int:
    """Ledger rows: the recorder is the last stage, so n rows means n completions have run (the
    test clock may move only then: a completion reads it for when its answer ended)."""
    try:
        conn = sqlite3.connect(f"file:{dirs().database}?mode=ro", uri=True)
        try:
            return conn.execute("SELECT COUNT(*) FROM requests").fetchone()[0]
        finally:
            conn.close()
    except sqlite3.Error:
        return 0


def test_a_conversation_too_large_for_the_memo_goes_out_with_its_cuts_before_its_analysis(tmp_path, monkeypatch):
    clock_file = tmp_path / "clock"
    monkeypatch.setenv("SCALPEL_TEST_CLOCK_FILE", str(clock_file))
    clock.set_offset(clock_file, 0)
    s = SessionBuilder(session_id=SID)
    for i in range(6):  # superseded reads: dead, cut for free once the cache has gone cold
        path = f"/home/user/proj/f{i}.py"
        s.call("Read", {"file_path": path}, file_text(path, 700))
        s.call("Edit", {"file_path": path, "old_string": "a", "new_string": "b"}, "updated")
    cfg = Config.load()
    cfg.set("policy", "cold")
    cfg.set("memo_mb", 1)  # a body of 300 KB and its analysis never fit: every request leaves a ghost
    cfg.set("parse_reuse_mb", 1)  # nor its parsed messages: the next request is parsed nowhere before it goes
    cfg.set("write_wait_ms", 5000)  # (a slow test machine must not drop the cut this test is about)
    with running_emulator() as emu:
        rt = Runtime(cfg, {"anthropic_upstream": emu.url}, port=0).start()
        try:
            stage = rt.pipeline.get("surgery")
            said: list = []
            ask = stage.may_defer
            stage.may_defer = lambda request, skeleton: said.append(ask(request, skeleton)) or said[-1]
            assert len(dumps(s.body())) > 256 * 1024  # the lane's size
            assert _post(rt.port, dumps(s.body())) == 200
            assert wait_for(lambda: _recorded() >= 1)
            clock.set_offset(clock_file, 600)  # past the TTL: the next request is a natural break
            s.call("Read", {"file_path": "/home/user/proj/g.py"}, file_text("g", 40))
            assert _post(rt.port, dumps(s.body())) == 200
            cut = emu.api_requests[-1].body
            assert cut.count(STUB_MARK.encode()) >= 3  # the dead reads went out as stubs
            assert wait_for(lambda: _recorded() >= 2)
            clock.set_offset(clock_file, 610)
            s.call("Read", {"file_path": "/home/user/proj/h.py"}, file_text("h", 40))
            body = dumps(s.body())
            assert _post(rt.port, body) == 200
            sent = emu.api_requests[-1]
            assert isinstance(said[-1], bytes) and sent.body == said[-1]  # the lane, with the ghost's bytes
            assert sent.status == 200 and sent.body.count(STUB_MARK.encode()) == cut.count(STUB_MARK.encode())
            assert sent.body.startswith(cut[:cut.rfind(b'{"role":"user"')])  # the cut prefix, byte for byte
            assert json.loads(sent.body)["messages"][-1] == json.loads(body)["messages"][-1]
        finally:
            rt.stop()
