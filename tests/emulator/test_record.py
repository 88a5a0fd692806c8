"""The emulator's record: what another process reads back over HTTP is what was received."""

from __future__ import annotations

import threading

from multidict import CIMultiDict, CIMultiDictProxy

from scalpel_desktop.emulator.record import RecordedRequest, Recorder
from scalpel_desktop.wire.usage import Usage

BODY = '{"model":"m","messages":[{"role":"user","content":"café \\u2603 ☃"}]}'.encode()


def recorded(recorder: Recorder, **kw) -> RecordedRequest:
    headers = CIMultiDictProxy(CIMultiDict([("X-Api-Key", "k"), ("Accept", "a"), ("accept", "b")]))
    fields = {"method": "POST", "path": "/v1/messages", "query": "beta=true", "headers": headers, "body": BODY,
              "time": 12.5, "api": "anthropic", "endpoint": "messages", "status": 200, "usage": Usage(1, 2, 3, 4, 5),
              "track": "main", "turn": 2, "fault": None, "error": None, "conversation": "sess/agent"}
    fields.update(kw)
    return recorder.add(**fields)


def test_a_record_survives_the_trip_through_json():
    rec = recorded(Recorder())
    back = RecordedRequest.from_dict(rec.as_dict())
    for name in ("index", "method", "path", "query", "body", "time", "api", "endpoint", "status", "usage", "track",
                 "turn", "fault", "error", "conversation"):
        assert getattr(back, name) == getattr(rec, name), name
    assert list(back.headers.items()) == list(rec.headers.items())  # repeated names and their order kept
    assert back.headers.getall("ACCEPT") == ["a", "b"]
    assert back.sha256 == rec.sha256 == rec.as_dict()["body_sha256"]
    assert rec.as_dict()["body_bytes"] == len(BODY)


def test_a_record_without_a_bill():
    rec = recorded(Recorder(), usage=None, status=None, query="")
    back = RecordedRequest.from_dict(rec.as_dict())
    assert back.usage is None and back.status is None
    assert rec.path_qs == "/v1/messages"
    assert recorded(Recorder()).path_qs == "/v1/messages?beta=true"


def test_json_of_the_raw_bytes():
    assert recorded(Recorder()).json()["messages"][0]["content"] == "café ☃ ☃"


def test_indexes_count_up_across_threads_and_clear_starts_again():
    recorder = Recorder()
    threads = [threading.Thread(target=lambda: [recorded(recorder) for _ in range(50)]) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(r.index for r in recorder.items) == list(range(200))
    snap = recorder.snapshot()
    recorder.clear()
    assert len(snap) == 200 and recorder.items == []
    assert recorded(recorder).index == 0
