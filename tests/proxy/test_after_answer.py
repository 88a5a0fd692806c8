"""The connection is not held while the pipeline completes a request (proxy/after_answer.py, forward.py).

A completion (the ledger row, a first sighting's analysis) runs after the
answer on a thread of its own. The client's next request on the same
keep-alive connection is answered while it still runs; the pipeline orders
per conversation, so a request of the same conversation sees its state.
"""

from __future__ import annotations

import http.client
import json
import threading
from concurrent.futures import ThreadPoolExecutor

from scalpel_desktop.emulator.testing import running_emulator
from scalpel_desktop.pipeline.chain import Chain
from scalpel_desktop.pipeline.identify import Identify
from scalpel_desktop.proxy.forward import ProxyOptions
from scalpel_desktop.proxy.server import ProxyServer, build_app

BOUND_S = 30.0


class SlowCompletion:
    """Holds conversation A's completion until released; counts what each request saw."""

    name, mutates = "slow", True  # a stage that could change a body: the pipeline runs before forwarding

    def __init__(self):
        self.release = threading.Event()
        self.completed: dict[str, int] = {}
        self.seen: list[tuple[str, int]] = []

    def on_request(self, ex):
        sid = ex.key.session_id
        self.seen.append((sid, self.completed.get(sid, 0)))

    def on_response(self, ex):
        sid = ex.key.session_id
        if sid == "A":
            assert self.release.wait(BOUND_S)
        self.completed[sid] = self.completed.get(sid, 0) + 1


def _body(text: str) -> bytes:
    return json.dumps({"model": "claude-sonnet-4-6", "max_tokens": 16,
                       "messages": [{"role": "user", "content": text}]}).encode()


def _post(conn: http.client.HTTPConnection, session: str, text: str) -> int:
    conn.request("POST", "/v1/messages", body=_body(text),
                 headers={"content-type": "application/json", "x-api-key": "sk-ant-test",
                          "anthropic-version": "2023-06-01", "x-claude-code-session-id": session})
    resp = conn.getresponse()
    resp.read()
    return resp.status


def test_the_next_request_on_the_connection_is_answered_while_the_previous_one_completes():
    stage = SlowCompletion()
    pool = ThreadPoolExecutor(max_workers=4)
    completer = ThreadPoolExecutor(max_workers=1)
    with running_emulator() as emu:
        opts = ProxyOptions(upstream=lambda api: emu.url, pipeline=Chain([Identify(), stage]), executor=pool,
                            completer=completer)
        server = ProxyServer(lambda: build_app(opts), 0).start()
        try:
            conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=BOUND_S)
            assert _post(conn, "A", "one") == 200
            # A's completion is held; the same connection's next request (another conversation) is answered
            assert _post(conn, "B", "two") == 200
            assert stage.completed.get("A", 0) == 0 and ("B", 0) in stage.seen
            # A's next request waits for A's completion, and sees it once released
            done: list[int] = []
            other = http.client.HTTPConnection("127.0.0.1", server.port, timeout=BOUND_S)
            t = threading.Thread(target=lambda: done.append(_post(other, "A", "three")), daemon=True)
            t.start()
            stage.release.set()
            t.join(BOUND_S)
            assert done == [200]
            assert stage.seen.count(("A", 1)) == 1 and ("A", 0) in stage.seen
        finally:
            stage.release.set()
            server.stop()
            pool.shutdown(wait=False)
            completer.shutdown(wait=True)


def test_a_completion_counts_as_in_flight_for_the_trimmer():
    """A first sighting sent as it came is parsed and analysed in its completion: the memory it
    frees is given back only if the trim waits for that completion, not just for the handler."""
    from scalpel_desktop.proxy.trim import Trimmer

    stage = SlowCompletion()
    pool = ThreadPoolExecutor(max_workers=4)
    completer = ThreadPoolExecutor(max_workers=1)
    trimmer = Trimmer(min_bytes=1)
    with running_emulator() as emu:
        opts = ProxyOptions(upstream=lambda api: emu.url, pipeline=Chain([Identify(), stage]), executor=pool,
                            completer=completer, trimmer=trimmer)
        server = ProxyServer(lambda: build_app(opts), 0).start()
        try:
            conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=BOUND_S)
            assert _post(conn, "A", "one") == 200  # answered; its completion is held
            pause = threading.Event()
            for _ in range(10):  # the handler is done within this; the completion is not
                pause.wait(0.05)
                assert trimmer.in_flight == 1 and trimmer.trims == 0
            stage.release.set()
            for _ in range(300):
                if trimmer.in_flight == 0:
                    break
                pause.wait(0.05)
            assert trimmer.in_flight == 0
        finally:
            stage.release.set()
            server.stop()
            pool.shutdown(wait=False)
            completer.shutdown(wait=True)
