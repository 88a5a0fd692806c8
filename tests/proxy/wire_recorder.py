"""A TCP relay that records the raw bytes a client puts on the wire.

It sits between a client and the proxy, outside both: every byte the client
sends is copied to a per-connection log before it is relayed, unparsed. The
requests are recovered afterwards by parsing those logs with h11 (keep-alive,
chunked uploads and all), so what a test compares is what the client really
sent, not anyone's account of it.
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass

import h11


@dataclass
class WireRequest:
    method: str
    target: str
    headers: list[tuple[str, str]]
    body: bytes


class WireRecorder:
    def __init__(self, target_port: int, target_host: str = "127.0.0.1"):
        self.target = (target_host, target_port)
        self.port = 0
        self._logs: list[bytearray] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.base_events.Server | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="wire-recorder", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> "WireRecorder":
        self._thread.start()
        self._ready.wait(10)
        return self

    def __exit__(self, *exc) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        self._server = loop.run_until_complete(asyncio.start_server(self._handle, "127.0.0.1", 0))
        self.port = self._server.sockets[0].getsockname()[1]
        self._ready.set()
        try:
            loop.run_forever()
        finally:
            self._server.close()
            loop.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        log = bytearray()
        self._logs.append(log)
        try:
            up_r, up_w = await asyncio.open_connection(*self.target)
        except OSError:
            writer.close()
            return

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter, record: bytearray | None) -> None:
            try:
                while data := await src.read(65536):
                    if record is not None:
                        record.extend(data)
                    dst.write(data)
                    await dst.drain()
            except (ConnectionError, OSError):
                pass
            finally:
                try:
                    dst.close()
                except Exception:  # noqa: BLE001
                    pass

        await asyncio.gather(pipe(reader, up_w, log), pipe(up_r, writer, None))

    def requests(self) -> list[WireRequest]:
        out: list[WireRequest] = []
        for log in list(self._logs):
            conn = h11.Connection(h11.SERVER)
            conn.receive_data(bytes(log))
            current: WireRequest | None = None
            while True:
                try:
                    event = conn.next_event()
                except h11.RemoteProtocolError:
                    break
                if event is h11.NEED_DATA or event is h11.PAUSED or isinstance(event, h11.ConnectionClosed):
                    break
                if isinstance(event, h11.Request):
                    current = WireRequest(
                        event.method.decode(), event.target.decode(),
                        [(k.decode(), v.decode("latin-1")) for k, v in event.headers], b"",
                    )
                elif isinstance(event, h11.Data) and current is not None:
                    current.body += event.data
                elif isinstance(event, h11.EndOfMessage) and current is not None:
                    out.append(current)
                    current = None
                    # Pretend we answered, so h11 parses the next pipelined/keep-alive request.
                    conn.send(h11.Response(status_code=200, headers=[("content-length", "0")]))
                    conn.send(h11.EndOfMessage())
                    conn.start_next_cycle()
        return out
