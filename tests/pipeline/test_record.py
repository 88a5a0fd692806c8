from __future__ import annotations

import json
import sqlite3

import pytest

from scalpel_desktop.wire.usage import Usage
from scalpel_desktop.pipeline.chain import Chain
from scalpel_desktop.pipeline.identify import Identify
from scalpel_desktop.pipeline.record import LedgerRecorder, build_row
from scalpel_desktop.exchange import ApiRequest, Decision, Realized, ResponseResult
from scalpel_desktop.store.ledger import LedgerWriter
from scalpel_desktop.wire.jsoncodec import dumps

SECRET_KEY = "sk-ant-api03-SENTINELKEY-0123456789abcdef"
SECRET_TEXT = "SENTINEL-TEXT-7f3a9c"
SESSION = "4b1d2c3e-1111-2222-3333-444455556666"


def make_request(body: dict, **headers) -> ApiRequest:
    h = {"user-agent": "claude-cli/2.1.332 (external, cli)", "x-api-key": SECRET_KEY,
         "authorization": f"Bearer {SECRET_KEY}", "x-claude-code-session-id": SESSION,
         "x-claude-code-agent-id": "agent-7", "anthropic-beta": "context-1m-2025-08-07"}
    h.update(headers)
    return ApiRequest(method="POST", path="/v1/messages", query="", api="anthropic", endpoint="messages",
                      headers=h, body=dumps(body), received_at=1_800_000_000.5)


BODY = {"model": "claude-sonnet-4-5-20250929", "max_tokens": 100,
        "system": [{"type": "text", "text": f"system {SECRET_TEXT}"}],
        "messages": [{"role": "user", "content": f"hello {SECRET_TEXT}"}]}


class Cutter:
    """A mutating stage as surgery would be: new body, decision, realized notes."""

    name = "cutter"
    mutates = True

    def on_request(self, ex):
        ex.new_body = dumps({**BODY, "messages": [{"role": "user", "content": "hello"}]})
        ex.decision = Decision("cut", "superseded_read x2", tokens_removed=1234,
                               figures={"payback_turns": 1.5, "rewrite_tokens": 0, "kinds": {"superseded_read": 2},
                                        "note": SECRET_TEXT + " and much more text than a label holds",
                                        "blob": {"text": SECRET_TEXT}, "list": [1, 2, "x"]})
        ex.realized = [Realized("surgery", 1000, 0.0003), Realized("tool_filter", 234, 0.0000702)]

    def on_response(self, ex):
        pass


def run_chain(stages, request, result):
    chain = Chain(stages)
    ex = chain.process(request)
    chain.complete(ex, result)
    return ex


def result(**kw) -> ResponseResult:
    base = dict(status=200, usage=Usage(input_tokens=12, cache_write_5m=3500, cache_write_1h=100, cache_read=40_000,
                                        output_tokens=77), ttfb_ms=123.4, total_ms=2345.6, finished_at=1_800_000_003.0)
    base.update(kw)
    return ResponseResult(**base)


def test_row_from_a_changed_request(tmp_path):
    w = LedgerWriter(tmp_path / "l.sqlite3")
    req = make_request(BODY)
    ex = run_chain([Identify(), Cutter(), LedgerRecorder(w)], req, result())
    w.close()
    conn = sqlite3.connect(tmp_path / "l.sqlite3")
    conn.row_factory = sqlite3.Row
    rows = conn.execute("SELECT * FROM requests").fetchall()
    assert len(rows) == 1
    r = dict(rows[0])
    assert r["ts"] == req.received_at
    assert (r["session"], r["agent"]) == (SESSION, "agent-7")
    assert r["client"] == "claude-cli/2.1.332 (external, cli)"
    assert (r["api"], r["endpoint"], r["model"], r["status"]) == ("anthropic", "messages", BODY["model"], 200)
    assert r["body_bytes"] == len(req.body) and r["sent_bytes"] == len(ex.new_body) < len(req.body)
    assert r["est_tokens_before"] == ex.tokens_before and r["est_tokens_after"] == ex.tokens_after
    assert (r["input_tokens"], r["cache_write_5m"], r["cache_write_1h"], r["cache_read"], r["output_tokens"]) == (
        12, 3500, 100, 40_000, 77)
    assert (r["decision"], r["reason"], r["tokens_removed"]) == ("cut", "superseded_read x2", 1234)
    assert r["realized_tokens"] == 1234 and r["realized_usd"] == pytest.approx(0.0003 + 0.0000702)
    assert (r["ttfb_ms"], r["total_ms"], r["error"]) == (123.4, 2345.6, None)
    figures = json.loads(r["figures"])
    assert figures["payback_turns"] == 1.5 and figures["kinds"] == {"superseded_read": 2}
    assert figures["blob"] == {} and figures["list"] == [1, 2]
    assert len(figures["note"]) <= 40


def test_no_usage_gives_null_usage_columns_and_unchanged_has_no_realized():
    ex = run_chain([Identify()], make_request(BODY), result(status=529, usage=None, ttfb_ms=None, error="upstream 529"))
    r = build_row(ex)
    assert all(r[c] is None for c in ("input_tokens", "cache_write_5m", "cache_write_1h", "cache_read", "output_tokens"))
    assert r["realized_tokens"] is None and r["realized_usd"] is None
    assert r["decision"] == "unchanged" and r["status"] == 529 and r["error"] == "upstream 529"
    assert r["sent_bytes"] == r["body_bytes"]


class Exploder:
    name = "exploder"
    mutates = True

    def on_request(self, ex):
        ex.new_body = b"{}"
        raise ValueError(f"could not handle block {SECRET_TEXT}")

    def on_response(self, ex):
        pass


def test_nothing_secret_or_content_reaches_the_row():
    long_ua = "agent/" + "u" * 500
    ex = run_chain([Identify(), Cutter(), Exploder()], make_request(BODY, **{"user-agent": long_ua}),
                   result(error=f"upstream said: invalid x-api-key: {SECRET_KEY} near {SECRET_TEXT[:3]}"))
    r = build_row(ex)
    text = json.dumps(r)
    assert SECRET_KEY not in text and "SENTINELKEY" not in text
    assert SECRET_TEXT not in text
    assert r["decision"] == "error" and r["reason"] == "exploder: ValueError"
    assert len(r["client"]) <= 120 and r["client"].startswith("agent/")
    assert set(r) <= {"ts", "session", "agent", "client", "api", "endpoint", "model", "status", "body_bytes",
                      "sent_bytes", "est_tokens_before", "est_tokens_after", "input_tokens", "cache_write_5m",
                      "cache_write_1h", "cache_read", "output_tokens", "decision", "reason", "tokens_removed",
                      "figures", "realized_tokens", "realized_usd", "ttfb_ms", "total_ms", "error", "project",
                      "regions", "banked_usd", "staked_usd"}


def test_recorder_observes_and_runs_while_paused(tmp_path):
    w = LedgerWriter(tmp_path / "l.sqlite3")
    rec = LedgerRecorder(w)
    assert rec.name == "record" and rec.mutates is False
    ex = Chain([Identify(), Cutter(), rec], paused=lambda: True).process(make_request(BODY))
    Chain([Identify(), Cutter(), rec], paused=lambda: True).complete(ex, result())
    w.close()
    conn = sqlite3.connect(tmp_path / "l.sqlite3")
    assert conn.execute("SELECT decision, sent_bytes = body_bytes FROM requests").fetchall() == [("paused", 1)]


def test_recorder_survives_a_disabled_writer(tmp_path):
    blocker = tmp_path / "f"
    blocker.write_text("")
    w = LedgerWriter(blocker / "x.sqlite3")
    w.flush()
    ex = run_chain([Identify(), LedgerRecorder(w)], make_request(BODY), result())
    assert ex.body_to_send() == make_request(BODY).body
    assert not w.enabled
    w.close()
