"""The JSON-RPC plumbing: client <-> router <-> upstream MCP server, over stdio.

Messages are newline-delimited JSON (the MCP stdio transport). The router
touches only: the ``initialize`` answer (adds ``capabilities.tools.listChanged``),
``tools/list`` (answered from the routing state; the full catalogue is fetched
from the upstream with the router's own request ids, following ``nextCursor``),
and ``tools/call`` of ``scalpel_search_tools`` (answered locally, then
``notifications/tools/list_changed``). Every other line is relayed byte for
byte, including every other ``tools/call`` (hidden tools too). When anything
goes wrong while answering ``tools/list``, the client's request is relayed
untouched (fail open).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import sys
import threading
import time
from typing import Any, BinaryIO, Callable, Sequence

from scalpel_desktop.paths import dirs, ensure_private_dir
from scalpel_desktop.private_files import open_private_append
from scalpel_desktop.tools.router import recent as recent_store
from scalpel_desktop.tools.router.routing import META_NAME, Router

log = logging.getLogger("scalpel.mcp")
LINE_LIMIT = 64 * 1024 * 1024


class StdioRouter:
    def __init__(self, command: Sequence[str], router: Router, *, inp: BinaryIO | None = None,
                 out: BinaryIO | None = None, remember: bool = True):
        self.command = list(command)
        self.router = router
        self.inp = inp or sys.stdin.buffer
        self.out = out or sys.stdout.buffer
        self.remember = remember
        self._ids = itertools.count(1)
        self._waiting: dict[str, asyncio.Future] = {}
        self._init_ids: set[Any] = set()
        self._catalog_ok = False
        self._catalog_lock: asyncio.Lock | None = None
        self._out_lock = threading.Lock()
        self.proc: asyncio.subprocess.Process | None = None

    # -- life cycle --------------------------------------------------------------
    async def run(self) -> int:
        self._catalog_lock = asyncio.Lock()
        self.proc = await asyncio.create_subprocess_exec(
            *self.command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, limit=LINE_LIMIT)
        loop = asyncio.get_running_loop()
        lines: asyncio.Queue = asyncio.Queue()

        def read_client() -> None:  # a thread: portable blocking reads of our stdin
            try:
                for line in self.inp:
                    loop.call_soon_threadsafe(lines.put_nowait, line)
            finally:
                loop.call_soon_threadsafe(lines.put_nowait, None)

        threading.Thread(target=read_client, name="mcp-client-reader", daemon=True).start()
        upstream = asyncio.create_task(self._pump_upstream())
        while True:
            getter = asyncio.create_task(lines.get())
            done, _ = await asyncio.wait({getter, upstream}, return_when=asyncio.FIRST_COMPLETED)
            if getter not in done:
                getter.cancel()
                break  # the upstream ended
            line = getter.result()
            if line is None:
                break  # the client closed our stdin
            # One message at a time, in order: a tools/list waits for the catalogue before the
            # next message is looked at, so what is listed never depends on a race.
            try:
                await self._from_client(line)
            except (ConnectionError, BrokenPipeError) as e:
                self.router.log(f"upstream connection lost ({e}); stopping")
                break
        return await self._shutdown(upstream)

    async def _shutdown(self, upstream: asyncio.Task) -> int:
        proc = self.proc
        assert proc is not None
        if proc.stdin and not proc.stdin.is_closing():
            proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), 5)
        except asyncio.TimeoutError:
            proc.terminate()  # our own child, by its handle
            try:
                await asyncio.wait_for(proc.wait(), 5)
            except asyncio.TimeoutError:
                proc.kill()
                await proc.wait()
        upstream.cancel()
        return proc.returncode or 0

    # -- client -> upstream ------------------------------------------------------
    async def _from_client(self, line: bytes) -> None:
        msg = _parse(line)
        if not isinstance(msg, dict) or "method" not in msg:
            await self._to_upstream(line)  # responses, batches, anything unknown: untouched
            return
        method, mid = msg.get("method"), msg.get("id")
        if method == "initialize" and mid is not None:
            self._init_ids.add(_key(mid))
        elif method == "tools/list" and mid is not None and not (msg.get("params") or {}).get("cursor"):
            if await self._answer_list(mid):
                return
        elif method == "tools/call" and mid is not None:
            params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
            name = params.get("name")
            if name == META_NAME:
                await self._answer_search(mid, params.get("arguments") or {})
                return
            if isinstance(name, str):
                self.router.recent = (recent_store.remember(self.command, self.router.recent, name)
                                      if self.remember else [name] + [n for n in self.router.recent if n != name])
        await self._to_upstream(line)

    async def _answer_list(self, mid: Any) -> bool:
        try:
            await self._load_catalog()
            tools = self.router.listing()
        except Exception as e:  # noqa: BLE001 - fail open: let the upstream answer
            self.router.log(f"routing: could not build the list ({type(e).__name__}: {e}); relaying tools/list untouched")
            return False
        self._to_client({"jsonrpc": "2.0", "id": mid, "result": {"tools": tools}})
        self.router.log_answer(tools)
        return True

    async def _answer_search(self, mid: Any, args: dict) -> None:
        query = str(args.get("query", "")) if isinstance(args, dict) else ""
        try:
            await self._load_catalog()
            text, revealed = self.router.search(query)
            result = {"content": [{"type": "text", "text": text}], "isError": False}
        except Exception as e:  # noqa: BLE001
            revealed = []
            result = {"content": [{"type": "text", "text": f"search failed: {e}"}], "isError": True}
        self._to_client({"jsonrpc": "2.0", "id": mid, "result": result})
        if revealed:
            self._to_client({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})

    async def _load_catalog(self) -> None:
        assert self._catalog_lock is not None
        async with self._catalog_lock:
            if self._catalog_ok:
                return
            tools: list = []
            cursor = None
            for _page in range(1000):
                result = await self._request_upstream("tools/list", {"cursor": cursor} if cursor else {})
                tools += result.get("tools") or []
                cursor = result.get("nextCursor")
                if not cursor:
                    break
            self.router.set_catalog(tools)
            self._catalog_ok = True

    async def _request_upstream(self, method: str, params: dict, timeout: float = 60) -> dict:
        rid = f"scalpel-router-{next(self._ids)}"
        fut: asyncio.Future = asyncio.get_running_loop().create_future()
        self._waiting[rid] = fut
        try:
            await self._to_upstream(json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}).encode() + b"\n")
            msg = await asyncio.wait_for(fut, timeout)
        finally:
            self._waiting.pop(rid, None)
        if "error" in msg:
            raise RuntimeError(f"upstream {method} failed: {msg['error']}")
        return msg.get("result") or {}

    async def _to_upstream(self, line: bytes) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        if not line.endswith(b"\n"):
            line += b"\n"
        self.proc.stdin.write(line)
        await self.proc.stdin.drain()

    # -- upstream -> client ------------------------------------------------------
    async def _pump_upstream(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        while True:
            line = await self.proc.stdout.readline()
            if not line:
                return
            msg = _parse(line)
            if isinstance(msg, dict) and "method" not in msg and "id" in msg:
                fut = self._waiting.get(msg["id"]) if isinstance(msg["id"], str) else None
                if fut is not None:
                    if not fut.done():
                        fut.set_result(msg)
                    continue
                if _key(msg["id"]) in self._init_ids and isinstance(msg.get("result"), dict):
                    self._init_ids.discard(_key(msg["id"]))
                    caps = msg["result"].setdefault("capabilities", {})
                    if isinstance(caps, dict):
                        tools = caps.get("tools")
                        caps["tools"] = {**(tools if isinstance(tools, dict) else {}), "listChanged": True}
                        self._to_client(msg)
                        continue
            elif isinstance(msg, dict) and msg.get("method") == "notifications/tools/list_changed":
                self._catalog_ok = False  # the upstream's catalogue changed: fetch it again
            self._write_client(line)

    def _to_client(self, msg: dict) -> None:
        self._write_client(json.dumps(msg, separators=(",", ":"), ensure_ascii=False).encode("utf-8") + b"\n")

    def _write_client(self, line: bytes) -> None:
        if not line.endswith(b"\n"):
            line += b"\n"
        with self._out_lock:
            self.out.write(line)
            self.out.flush()


def _parse(line: bytes) -> Any:
    try:
        return json.loads(line)
    except ValueError:
        return None


def _key(mid: Any) -> str:
    return json.dumps(mid)


def make_logger(to_stderr: bool = True) -> Callable[[str], None]:
    """Log lines go to ``dirs().logs / "mcp-router.log"`` and stderr (never stdout: that is the protocol)."""
    path = None
    try:
        path = ensure_private_dir(dirs().logs) / "mcp-router.log"
    except OSError:
        pass

    def write(message: str) -> None:
        stamp = time.strftime("%Y-%m-%d %H:%M:%S")
        if to_stderr:
            print(f"scalpel mcp: {message}", file=sys.stderr, flush=True)
        if path is not None:
            try:
                with open_private_append(path) as f:  # 0600: it names paths and tools
                    f.write(f"{stamp} {message}\n")
            except OSError:
                pass

    return write
