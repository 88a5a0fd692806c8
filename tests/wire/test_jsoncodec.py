import json

from scalpel_desktop.wire import jsoncodec
from tests.support import corpus_dir


def test_compact_raw_utf8_like_claude_code():
    obj = {"b": "é\n\u2028\x00", "a": [1, True, None, {"z": "\"q\""}]}
    assert jsoncodec.dumps(obj) == json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def test_every_captured_body_round_trips_byte_for_byte():
    n = 0
    for f in sorted(corpus_dir("wire").glob("claude-code-*/requests*.jsonl")):
        for line in f.read_text(encoding="utf-8").splitlines():
            body = json.loads(line)["body"]
            raw = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()
            assert jsoncodec.round_trips(raw, jsoncodec.loads(raw))
            n += 1
    assert n > 50


def test_a_body_it_cannot_reproduce_is_detected():
    raw = b'{"a": 1}'
    assert not jsoncodec.round_trips(raw, jsoncodec.loads(raw))


def test_too_deep_names_the_write_limit_only():
    import pytest

    from scalpel_desktop.wire.jsoncodec import dumps, loads, too_deep

    doc = loads(b"[" * 300 + b"]" * 300)  # reads fine
    with pytest.raises(TypeError) as e:
        dumps(doc)
    assert too_deep(e.value) and too_deep(RecursionError())
    with pytest.raises(TypeError) as other:
        dumps({1.5j})
    assert not too_deep(other.value)


def test_a_large_parse_pauses_the_collector_and_resumes_it():
    import gc

    from scalpel_desktop.wire.jsoncodec import GC_PAUSE_BYTES, JSONDecodeError, dumps, loads

    big = dumps({"messages": [{"role": "user", "content": "x" * 100}] * (GC_PAUSE_BYTES // 100)})
    assert len(big) >= GC_PAUSE_BYTES and gc.isenabled()
    assert loads(big)["messages"][0]["content"] == "x" * 100
    assert gc.isenabled()  # collections resume right after
    gc.disable()
    try:
        loads(big)
        assert not gc.isenabled()  # a caller that paused the collector keeps it paused
    finally:
        gc.enable()
    try:
        loads(big[:-3])
    except JSONDecodeError:
        pass
    assert gc.isenabled()  # also after a body that does not parse
