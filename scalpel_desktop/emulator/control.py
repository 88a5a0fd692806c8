"""The emulator's control routes under ``/_emulator/``: the HTTP twin of the Python API.

``GET requests[?since=N]``, ``POST fault``, ``POST clear``, ``POST clock``,
``POST script``, ``POST diagnosis`` (``{"mode": ...}``: how the cache-diagnosis beta is
answered, ``emulator/diagnostics.py``), ``GET health`` (see docs/emulator.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiohttp import web

from scalpel_desktop import clock
from scalpel_desktop.wire.jsoncodec import loads

if TYPE_CHECKING:
    from scalpel_desktop.emulator.server import Emulator


def add_control_routes(app: web.Application, emulator: "Emulator") -> None:
    emu = emulator

    async def c_health(request: web.Request) -> web.Response:
        return web.json_response({"ok": True, "emulator": True, "requests": len(emu.recorder.items),
                                  "clock": emu.now(), "offset": emu.offset})

    async def c_requests(request: web.Request) -> web.Response:
        since = int(request.query.get("since", "0") or 0)
        items = [r.as_dict() for r in emu.received[since:]]
        return web.json_response({"requests": items})

    async def c_fault(request: web.Request) -> web.Response:
        try:
            spec = await request.json()
            fault = emu.fault(spec.pop("kind"), spec.pop("count", 1), **spec)
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            return web.json_response({"ok": False, "error": str(e)}, status=400)
        return web.json_response({"ok": True, "fault": fault.as_dict()})

    async def c_clear(request: web.Request) -> web.Response:
        spec = await _json_or_empty(request)
        emu.clear(cache=bool(spec.get("cache")))
        return web.json_response({"ok": True})

    async def c_clock(request: web.Request) -> web.Response:
        spec = await _json_or_empty(request)
        if "offset" in spec:
            emu.set_offset(float(spec["offset"]))
        if "advance" in spec:
            emu.advance(float(spec["advance"]))
        shared = clock.offset() if emu.shared_clock else None  # (the file every process reads: the proxy too)
        return web.json_response({"ok": True, "clock": emu.now(), "offset": emu.offset, "shared_offset": shared})

    async def c_script(request: web.Request) -> web.Response:
        from scalpel_desktop.emulator.scripts import named_script

        spec = await _json_or_empty(request)
        try:
            emu.set_script(named_script(spec.get("name", "default"), **(spec.get("args") or {})))
        except (KeyError, TypeError) as e:
            return web.json_response({"ok": False, "error": str(e)}, status=400)
        return web.json_response({"ok": True})

    async def c_diagnosis(request: web.Request) -> web.Response:
        spec = await _json_or_empty(request)
        try:
            emu.diagnosis.set_mode(str(spec.get("mode", "beta")))
        except ValueError as e:
            return web.json_response({"ok": False, "error": str(e)}, status=400)
        return web.json_response({"ok": True, "mode": emu.diagnosis.mode})

    r = app.router
    r.add_get("/_emulator/health", c_health)
    r.add_get("/_emulator/requests", c_requests)
    r.add_post("/_emulator/fault", c_fault)
    r.add_post("/_emulator/clear", c_clear)
    r.add_post("/_emulator/clock", c_clock)
    r.add_post("/_emulator/script", c_script)
    r.add_post("/_emulator/diagnosis", c_diagnosis)


async def _json_or_empty(request: web.Request) -> dict:
    raw = await request.read()
    if not raw.strip():
        return {}
    data = loads(raw)
    return data if isinstance(data, dict) else {}
