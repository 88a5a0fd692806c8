"""Faults, each as the client would have seen it without the proxy (SPEC 8), against the real emulator."""

from __future__ import annotations

import http.client
import json
import socket
import time

import anthropic
import httpx2
import openai
import pytest

from scalpel_desktop.config import Config
from scalpel_desktop.exchange import Exchange
from scalpel_desktop.proxy.portcheck import PortInUse
from scalpel_desktop.runtime import Runtime
from tests.proxy.conftest import SENTINEL_KEY, SentRecorder, wait_for
from tests.support import free_port

MODEL = "claude-sonnet-4-6"
BODY = {"model": MODEL, "max_tokens": 50, "messages": [{"role": "user", "content": "hello"}]}
HEADERS = {"x-api-key": SENTINEL_KEY, "anthropic-version": "2023-06-01", "content-type": "application/json"}


def raw_post(base: str, path: str, body: bytes, headers=HEADERS) -> tuple[int, dict, bytes]:
    with httpx2.Client(timeout=60) as c:
        r = c.post(base + path, content=body, headers=headers)
        return r.status_code, dict(r.headers), r.content


def test_upstream_down_is_a_502_in_each_api_shape():
    dead = f"http://127.0.0.1:{free_port()}"
    rt = Runtime(Config.load(), {"anthropic_upstream": dead, "openai_upstream": dead}, port=0).start()
    try:
        base = f"http://127.0.0.1:{rt.port}"
        client = anthropic.Anthropic(base_url=base, api_key=SENTINEL_KEY, max_retries=0)
        with pytest.raises(anthropic.APIStatusError) as err:
            client.messages.create(**BODY)
        assert err.value.status_code == 502
        assert err.value.body["type"] == "error" and err.value.body["error"]["type"] == "api_error"
        assert "unreachable" in err.value.body["error"]["message"]

        oai = openai.OpenAI(base_url=base + "/openai/v1", api_key="sk-x", max_retries=0)
        with pytest.raises(openai.APIStatusError) as err:
            oai.chat.completions.create(model="gpt-4.1", messages=[{"role": "user", "content": "hi"}])
        assert err.value.status_code == 502
        assert err.value.body["type"] == "api_error" and "unreachable" in err.value.body["message"]
        assert rt.status()["errors"] == 2 and "unreachable" in rt.status()["last_error"]
    finally:
        rt.stop()


def test_port_taken_is_a_clear_error_and_leaves_no_lock():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(1)
    port = s.getsockname()[1]
    try:
        with pytest.raises(PortInUse) as err:
            Runtime(Config.load(), port=port).start()
        assert f"port {port}" in str(err.value) and "already in use" in str(err.value)
    finally:
        s.close()
    rt = Runtime(Config.load(), port=port).start()  # the lock was released
    rt.stop()


@pytest.mark.parametrize("kind", ["529", "429", "500"])
def test_upstream_errors_pass_through_verbatim(proxy, emu, kind):
    body = json.dumps(BODY).encode()
    emu.fault(kind)
    direct = raw_post(emu.url, "/v1/messages", body)
    emu.fault(kind)
    via = raw_post(proxy.url, "/v1/messages", body)
    assert via[0] == direct[0] == int(kind)
    assert via[2] == direct[2]
    for h in ("content-type", "retry-after", "x-should-retry"):
        assert via[1].get(h) == direct[1].get(h)
    assert emu.received[-1].body == body


def _sse_events(raw: bytes) -> list[str]:
    return [line[len(b"event: "):].decode() for line in raw.split(b"\n") if line.startswith(b"event: ")]


def test_mid_stream_error_event_is_passed_through(proxy, emu):
    body = json.dumps(dict(BODY, stream=True)).encode()
    emu.fault("error_event", after_events=3)
    direct = raw_post(emu.url, "/v1/messages", body)
    emu.fault("error_event", after_events=3)
    via = raw_post(proxy.url, "/v1/messages", body)
    assert via[0] == direct[0] == 200
    assert _sse_events(via[2]) == _sse_events(direct[2])
    assert _sse_events(via[2])[-1] == "error" and b"overloaded_error" in via[2]
    # and the SDK sees the error as it would have directly
    emu.fault("error_event", after_events=3)
    client = anthropic.Anthropic(base_url=proxy.url, api_key=SENTINEL_KEY, max_retries=0)
    with pytest.raises(anthropic.APIStatusError):
        with client.messages.stream(**BODY) as s:
            s.until_done()


def test_dropped_upstream_stream_reaches_the_client_as_a_broken_stream(proxy, emu):
    emu.fault("drop", after_events=3)
    client = anthropic.Anthropic(base_url=proxy.url, api_key=SENTINEL_KEY, max_retries=0)
    with pytest.raises((anthropic.APIConnectionError, httpx2.HTTPError, anthropic.APIError)):
        with client.messages.stream(**BODY) as s:
            s.until_done()
    assert wait_for(lambda: proxy.runtime.status()["errors"] >= 1)
    assert "broke off" in proxy.runtime.status()["last_error"]


def test_client_disconnect_cancels_the_upstream_call(proxy, emu):
    emu.fault("slow", delay=0.3)
    body = json.dumps(dict(BODY, stream=True)).encode()
    sock = socket.create_connection(("127.0.0.1", proxy.runtime.port), timeout=10)
    head = (
        f"POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1:{proxy.runtime.port}\r\n"
        + "".join(f"{k}: {v}\r\n" for k, v in HEADERS.items())
        + f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    sock.sendall(head + body)
    first = sock.recv(65536)
    assert first.startswith(b"HTTP/1.1 200")
    sock.close()
    # The emulator sees its connection closed (its next write fails) well before the stream's end.
    assert wait_for(lambda: emu.received and emu.received[-1].error == "client disconnected", timeout=10)


class _Boom:
    name = "boom"
    mutates = True

    def on_request(self, ex: Exchange) -> None:
        ex.new_body = b'{"changed": true}'
        raise RuntimeError("stage exploded")

    def on_response(self, ex: Exchange) -> None:
        raise RuntimeError("stage exploded again")


def test_pipeline_exception_forwards_the_original_bytes(proxy, emu, monkeypatch):
    proxy.runtime._pipeline.stages.insert(0, _Boom())
    rec = SentRecorder()
    client = anthropic.Anthropic(
        base_url=proxy.url, api_key=SENTINEL_KEY, max_retries=0,
        http_client=anthropic.DefaultHttpxClient(event_hooks={"request": [rec]}),
    )
    msg = client.messages.create(**BODY)
    assert msg.content
    assert emu.received[-1].body == rec.bodies[-1]

    # the pipeline itself raising (not just a stage): still the original bytes
    def explode(request):
        raise RuntimeError("pipeline exploded")

    monkeypatch.setattr(proxy.runtime._pipeline, "process", explode)
    with client.messages.stream(**BODY) as s:
        s.until_done()
    assert emu.received[-1].body == rec.bodies[-1]


class _Seen:
    name = "seen"
    mutates = False

    def __init__(self):
        self.sizes: list[int] = []

    def on_request(self, ex: Exchange) -> None:
        self.sizes.append(len(ex.request.body))

    def on_response(self, ex: Exchange) -> None:
        pass


def test_body_over_the_bound_streams_through_untouched(proxy, emu):
    seen = _Seen()
    proxy.runtime._pipeline.stages.insert(0, seen)
    proxy.runtime.set_settings({"body_limit_mb": 1})
    big = dict(BODY, messages=[{"role": "user", "content": "ü" * 800_000}])  # 1.6 MB of UTF-8
    body = json.dumps(big, ensure_ascii=False, separators=(",", ":")).encode()
    status, _, _ = raw_post(proxy.url, "/v1/messages", body)
    assert status == 200 and emu.received[-1].body == body

    def chunks():  # no Content-Length: found over the bound while reading
        for i in range(0, len(body), 100_000):
            yield body[i : i + 100_000]

    with httpx2.Client(timeout=60) as c:
        r = c.post(proxy.url + "/v1/messages", content=chunks(), headers=HEADERS)
    assert r.status_code == 200 and emu.received[-1].body == body
    small = json.dumps(BODY).encode()
    assert raw_post(proxy.url, "/v1/messages", small)[0] == 200
    assert wait_for(lambda: len(seen.sizes) == 1)
    assert seen.sizes == [len(small)]  # the pipeline never saw the big ones


def test_twenty_second_stream_with_five_second_silences_survives(proxy, emu):
    emu.fault("slow", silences=[[1, 5], [2, 5], [3, 5], [4, 5]])
    client = anthropic.Anthropic(base_url=proxy.url, api_key=SENTINEL_KEY, max_retries=0)
    t0 = time.monotonic()
    with client.messages.stream(**BODY) as s:
        final = s.get_final_message()
    assert time.monotonic() - t0 >= 19
    assert final.stop_reason == "end_turn" and final.usage.output_tokens > 0
    assert emu.received[-1].error in (None, "")


def test_a_client_that_hangs_up_after_done_is_still_billed(proxy, emu):
    """The openai SDK closes its stream at ``[DONE]``, before the stream's end: the proxy's last
    write then finds the client gone. The usage the upstream sent before that is still counted."""
    oai = openai.OpenAI(base_url=proxy.openai_url, api_key="sk-x", max_retries=0)
    chunks = list(oai.chat.completions.create(model="gpt-4.1", messages=[{"role": "user", "content": "hi"}],
                                              stream=True, stream_options={"include_usage": True}))
    events = len(chunks) + 1  # the chunks and [DONE]
    assert wait_for(lambda: proxy.runtime.status()["requests"] == 1)
    emu.fault("slow", silences=[[events, 1.0]])  # the end comes 1 s after [DONE]: the client has left
    chunks = list(oai.chat.completions.create(model="gpt-4.1", messages=[{"role": "user", "content": "hi"}],
                                              stream=True, stream_options={"include_usage": True}))
    assert chunks[-1].usage is not None
    assert wait_for(lambda: proxy.runtime.status()["requests"] == 2)
    bills = emu.bills[-2:]
    st = proxy.runtime.status()
    assert st["tokens_in"] == sum(b.prompt_tokens for b in bills)
    assert st["tokens_out"] == sum(b.output_tokens for b in bills)


def test_non_api_paths_are_forwarded_and_counted(proxy, emu):
    conn = http.client.HTTPConnection("127.0.0.1", proxy.runtime.port, timeout=10)
    conn.request("GET", "/v1/models?limit=5", headers={"x-api-key": SENTINEL_KEY, "anthropic-version": "2023-06-01"})
    r = conn.getresponse()
    data = json.loads(r.read())
    assert r.status == 200 and data["data"]
    assert emu.received[-1].path == "/v1/models" and emu.received[-1].query == "limit=5"
    assert wait_for(lambda: proxy.runtime.status()["requests"] == 1)
    assert proxy.runtime.status()["api_requests"] == 0


class _Cutter:
    """A mutating stage that records every request it was allowed to change."""

    name = "cutter"
    mutates = True

    def __init__(self):
        self.ran = 0

    def on_request(self, ex: Exchange) -> None:
        self.ran += 1

    def on_response(self, ex: Exchange) -> None:
        pass


def test_a_resume_during_a_paused_request_does_not_let_mutating_stages_at_it(proxy, emu):
    """Paused when forwarded means unchanged upstream; the pipeline's later look at the
    request must see it as paused too, even when the user resumed in between."""
    from tests.proxy.conftest import wait_for

    chain = proxy.runtime._pipeline
    cutter = _Cutter()
    readings = iter([True])  # paused when the proxy forwards, resumed at every later reading
    chain.paused = lambda: next(readings, False)
    seen = _Seen()  # observing: runs whatever the switch says, so it shows the observation happened
    chain.stages = [cutter, seen] + [s for s in chain.stages if not getattr(s, "mutates", True)]
    client = anthropic.Anthropic(base_url=proxy.url, api_key=SENTINEL_KEY, max_retries=0)
    assert client.messages.create(**BODY).content
    assert wait_for(lambda: len(seen.sizes) == 1)
    assert cutter.ran == 0
