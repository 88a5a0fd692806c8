"""An upstream that records the exact bytes it receives and answers every request 200.

Raw TCP parsed with h11: no decompression, no JSON, no opinion about the body,
so a test compares what really reached the upstream (chunked uploads de-chunked,
``Content-Encoding`` left alone) with what the client sent.
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass

import h11

ANSWER = (b'{"id":"msg_rec","type":"message","role":"assistant","model":"m","content":[],'
          b'"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":1}}')


@dataclass
class Received:
    method: str
    target: str
    headers: dict[str, str]
    body: bytes


class RecordingUpstream:
    def __init__(self, respond=None):
        """``respond(received) -> (status, headers, body)``: another answer than the 200 ``ANSWER``."""
        self.respond = respond
        self.port = 0
        self.received: list[Received] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="recording-upstream", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> RecordingUpstream:
        self._thread.start()
        assert self._ready.wait(10)
        return self

    def __exit__(self, *exc) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        server = loop.run_until_complete(asyncio.start_server(self._handle, "127.0.0.1", 0))
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        try:
            loop.run_forever()
        finally:
            server.close()
            loop.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = h11.Connection(h11.SERVER, max_incomplete_event_size=1 << 30)
        current: Received | None = None
        try:
            while True:
                event = conn.next_event()
                if event is h11.NEED_DATA:
                    data = await reader.read(1 << 16)
                    conn.receive_data(data)
                    if not data:
                        return
                    continue
                if isinstance(event, h11.Request):
                    current = Received(event.method.decode(), event.target.decode(),
                                       {k.decode().lower(): v.decode("latin-1") for k, v in event.headers}, b"")
                elif isinstance(event, h11.Data) and current is not None:
                    current.body += event.data
                elif isinstance(event, h11.EndOfMessage) and current is not None:
                    self.received.append(current)
                    status, headers, body = (self.respond(current) if self.respond is not None
                                             else (200, [("content-type", "application/json")], ANSWER))
                    current = None
                    writer.write(conn.send(h11.Response(status_code=status, headers=[
                        *headers, ("content-length", str(len(body)))])))
                    writer.write(conn.send(h11.Data(data=body)))
                    writer.write(conn.send(h11.EndOfMessage()))
                    await writer.drain()
                    if conn.our_state is h11.MUST_CLOSE:
                        return
                    conn.start_next_cycle()
                elif isinstance(event, h11.ConnectionClosed) or event is h11.PAUSED:
                    return
        except (h11.ProtocolError, ConnectionError, OSError):
            return
        finally:
            writer.close()
