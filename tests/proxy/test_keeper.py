"""The cache keeper end to end: the real proxy (runtime) in front of the emulator, on the shared test clock.

A user whose ledger holds savings and pauses of ten minutes: after an answer, the proxy pings before the
TTL runs out with the request's own bytes (only ``max_tokens`` and ``stream`` differ), the ping reads the
entry the request wrote (the emulator's cache model says so), the return after 15 minutes reads the whole
prefix, and the ledger holds the pings (staked) and the re-write avoided (banked). A new request cancels
the wait; the pings stop at the plan's count, never past the ski-rental bound; nothing is pinged with an
empty budget, with ``keepalive`` off, or after the SessionEnd hook."""

from __future__ import annotations

import json
import os
import sqlite3
import urllib.request
import uuid
from pathlib import Path

import pytest

from scalpel_desktop import clock, hooks_entry
from scalpel_desktop.config import Config
from scalpel_desktop.paths import dirs
from scalpel_desktop.runtime import Runtime
from scalpel_desktop.store.db import connect
from scalpel_desktop.surgery.keeper import Pauses, ski_rental_bound
from tests.proxy.conftest import SENTINEL_KEY, wait_for

MODEL = "claude-sonnet-4-5"
BIG = "The design notes say many things. " * 900  # about 7,700 tokens by the emulator's rule


def seed(banked_usd: float, pauses: int = 6, pause_s: float = 900.0) -> None:
    """An earlier month of the user's ledger: ``pauses`` conversations with a 15-minute pause, and savings."""
    conn = connect(dirs().database)
    t0 = clock.now() - 30 * 86400
    for s in range(pauses):
        sid, t = f"old-{s}", t0 + s * 7200
        for gap in (0.0, 5.0, pause_s + 1.0):
            t += gap
            conn.execute("INSERT INTO requests (ts, session, endpoint, total_ms, model, status) "
                         "VALUES (?, ?, 'messages', 1000.0, ?, 200)", (t, sid, MODEL))
    if banked_usd:
        conn.execute("INSERT INTO requests (ts, session, endpoint, model, status, banked_usd) "
                     "VALUES (?, 'old-bank', 'messages', ?, 200, ?)", (t0 + 99_000, MODEL, banked_usd))
    conn.commit()
    conn.close()


class Session:
    def __init__(self, url: str):
        self.url, self.sid = url + "/v1/messages", str(uuid.uuid4())
        self.msgs: list = []

    def send(self, text: str) -> dict:
        for m in self.msgs:  # the client's one marker moves to the last message
            if isinstance(m["content"], list):
                m["content"] = [{k: v for k, v in b.items() if k != "cache_control"} for b in m["content"]]
        self.msgs.append({"role": "user", "content": [{"type": "text", "text": text,
                                                       "cache_control": {"type": "ephemeral"}}]})
        body = {"model": MODEL, "max_tokens": 1024, "system": [{"type": "text", "text": "You help with notes."}],
                "messages": self.msgs, "metadata": {"user_id": json.dumps({"session_id": self.sid})},
                "thinking": {"type": "adaptive"}, "stream": False}
        req = urllib.request.Request(self.url, data=json.dumps(body).encode(), headers={
            "x-api-key": SENTINEL_KEY, "anthropic-version": "2023-06-01", "content-type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as r:
            answer = json.loads(r.read())
        self.msgs.append({"role": "assistant", "content": answer["content"]})
        return answer


@pytest.fixture
def shared_clock(tmp_path, monkeypatch):
    path = tmp_path / "clock"
    clock.set_offset(path, 0)
    monkeypatch.setenv("SCALPEL_TEST_CLOCK_FILE", str(path))
    return path


def start(emu, **settings) -> tuple[Runtime, object]:
    rt = Runtime(Config.load(), {"anthropic_upstream": emu.url, "keepalive": True, "risk_cap_pct": 100.0,
                                 **settings}, port=0).start()
    assert wait_for(lambda: rt.pipeline.get("surgery") is not None)
    return rt, rt.pipeline.get("keeper")


def move_to(path, keeper, t: float) -> None:
    """The shared clock to ``t``; back once the keeper has looked at it and its pings are answered."""
    clock.set_offset(path, clock.offset() + t - clock.now())
    assert wait_for(lambda: keeper.checked_at >= t, 5)
    assert wait_for(lambda: not any(w.busy for w in list(keeper._waits.values())), 10)


def answered(keeper, n: int) -> None:
    assert wait_for(lambda: len(keeper._waits) >= n or keeper.last_reason, 5)


def pings(emu) -> list:
    return [r for r in emu.api_requests if r.json().get("max_tokens") == 1]


def rows(decision: str) -> list:
    conn = sqlite3.connect(dirs().database)
    try:
        return conn.execute("SELECT staked_usd, banked_usd, cache_read, figures FROM requests "
                            "WHERE endpoint = 'keepalive' AND decision = ?", (decision,)).fetchall()
    finally:
        conn.close()


def test_a_paused_conversation_is_kept_warm_and_its_return_reads_the_whole_prefix(emu, shared_clock):
    seed(banked_usd=5.0)
    rt, keeper = start(emu)
    try:
        s = Session(f"http://127.0.0.1:{rt.port}")
        s.send(BIG)
        first = emu.api_requests[-1]
        assert wait_for(lambda: keeper.status()["waiting"] == 1, 5), keeper.last_reason
        w = next(iter(keeper._waits.values()))
        assert w.plan.pings == 3  # this user comes back after 15 minutes: two pings alone would lapse
        for _ in w.plan.at:  # each due TTL - lead after the cache's last use (the request, then each ping)
            move_to(shared_clock, keeper, w.last_use + w.plan.step_s + 0.5)
        move_to(shared_clock, keeper, w.ended_at + 900)  # 15 minutes: nothing more (the plan's three)
        got = pings(emu)
        assert len(got) == 3 and keeper.stats["pings"] == 3
        sent, ping = first.json(), got[0].json()
        assert {k: v for k, v in ping.items() if k not in ("max_tokens", "stream")} == \
            {k: v for k, v in sent.items() if k not in ("max_tokens", "stream")}
        assert ping["max_tokens"] == 1 and ping["stream"] is False
        assert got[0].headers.get("x-api-key") == SENTINEL_KEY  # the client's own credentials, from memory
        # each ping went before the entry could expire and read the very entry the request wrote
        assert all(b.time - a.time < 300 for a, b in zip([first, *got], got))
        cached = first.usage.cache_read + first.usage.cache_write
        assert [p.usage.cache_read for p in got] == [cached] * 3
        assert all(p.usage.cache_write == 0 for p in got)
        s.send("And what about the second part?")  # the person is back after 15 minutes
        back = emu.api_requests[-1]
        assert back.usage.cache_read >= cached  # warm: no re-write of the prefix
        assert wait_for(lambda: keeper.stats["kept"] == 1, 5)
        assert not keeper._returning
    finally:
        rt.stop()
    staked = rows("ping")
    assert len(staked) == 3 and all(r[0] > 0 and r[2] == cached for r in staked)
    (kept,) = rows("kept")
    assert kept[1] > sum(r[0] for r in staked)  # the re-write avoided beat the pings' cost
    assert json.loads(kept[3])["pings"] == 3
    conn = sqlite3.connect(dirs().database)
    assert conn.execute("SELECT COUNT(*) FROM requests WHERE endpoint = 'messages' AND session = ?",
                        (s.sid,)).fetchone()[0] == 2  # the pings are in no conversation's history
    conn.close()
    for root in (os.environ["SCALPEL_HOME"], os.environ["HOME"]):  # the credentials it used: never on disk
        for path in Path(root).rglob("*"):
            assert not path.is_file() or SENTINEL_KEY.encode() not in path.read_bytes(), path


def test_a_new_request_cancels_and_the_pings_stop_at_the_ski_rental_bound(emu, shared_clock):
    seed(banked_usd=50.0)
    rt, keeper = start(emu)
    try:
        s = Session(f"http://127.0.0.1:{rt.port}")
        s.send(BIG)
        assert wait_for(lambda: keeper.status()["waiting"] == 1, 5), keeper.last_reason
        w = next(iter(keeper._waits.values()))
        move_to(shared_clock, keeper, w.sent_at + w.plan.at[0] - 20)  # not yet due
        s.send("One more thing.")  # back before the first ping: the wait is cancelled
        assert w.done and not pings(emu)
        assert wait_for(lambda: keeper.status()["waiting"] == 1, 5)  # (the new answer's own wait)
        w = next(iter(keeper._waits.values()))
        # a user who always came back just inside the bound's last cover: the rule goes all the way to it
        bound = ski_rental_bound(w.plan.quote)
        back = bound * w.plan.step_s - (w.ended_at - w.sent_at) + 300 - 5
        keeper._pauses = Pauses.of([back] * 30)
        w.armed = keeper._plan(w)
        assert w.plan.pings == bound > 2
        for k in range(bound + 3):  # ... and nobody comes back
            move_to(shared_clock, keeper, w.last_use + w.plan.step_s + 0.5)
        assert len(pings(emu)) == bound == keeper.stats["pings"]
        assert all(p.usage.cache_write == 0 for p in pings(emu))
    finally:
        rt.stop()


def test_nothing_is_pinged_with_an_empty_budget_off_or_after_the_session_ended(emu, shared_clock):
    seed(banked_usd=0.0)
    rt, keeper = start(emu)
    try:
        s = Session(f"http://127.0.0.1:{rt.port}")
        s.send(BIG)
        assert wait_for(lambda: "budget" in keeper.last_reason, 5), keeper.last_reason  # a fresh install's
        assert keeper.status()["waiting"] == 0
        budget = rt.pipeline.get("surgery").economist.budget
        budget.bank(5.0)  # (savings come in)
        s.send("Next.")
        assert wait_for(lambda: keeper.status()["waiting"] == 1, 5), keeper.last_reason
        w = next(iter(keeper._waits.values()))
        budget.stake(budget.balance_usd)  # ... and go to other bets before the ping is due
        move_to(shared_clock, keeper, w.last_use + w.plan.step_s + 0.5)
        assert not pings(emu) and keeper.stats["refused"] == 1 and "budget" in keeper.last_refusal
        budget.bank(5.0)
        s.send("Again.")
        assert wait_for(lambda: keeper.status()["waiting"] == 1, 5)
        w = next(iter(keeper._waits.values()))
        w.armed, w.plan = False, None  # as an answer without a stop reason is held ...
        assert keeper.status()["waiting"] == 0
        hooks_entry.run("notification", {"session_id": s.sid})  # ... until the Notification hook says it waits
        assert w.armed and w.plan.pings > 0 and keeper.status()["waiting"] == 1
        hooks_entry.run("session-end", {"session_id": s.sid})  # Claude Code's SessionEnd hook, as installed
        assert keeper.status()["waiting"] == 0
        s.send("And again.")
        assert wait_for(lambda: keeper.status()["waiting"] == 1, 5)
        rt.set_settings({"keepalive": False})
        w = next(iter(keeper._waits.values()))
        move_to(shared_clock, keeper, w.last_use + w.plan.step_s + 0.5)
        assert not pings(emu) and keeper.status()["waiting"] == 0
        with pytest.raises(ValueError):
            keeper.action({"event": "nonsense"})
    finally:
        rt.stop()
    assert not rows("ping")
