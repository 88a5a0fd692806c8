"""Control-API action ``tools``: the tray, the dashboard and scripts change the removal list.

``POST /_scalpel/control/tools`` with ``{"op": ..., ...}``:

* ``{"op": "remove", "name": N, "force": false, "now": false, "source": "tray"}``
* ``{"op": "restore", "name": N, "now": false, "source": "dashboard"}``
* ``{"op": "on"}`` / ``{"op": "off"}``   the filter as a whole, for new sessions
* ``{"op": "list"}`` / ``{"op": "suggest"}`` / ``{"op": "history"}``   read-only
* ``{"op": "forget_pins"}``   drop the proxy's cached pins (after a re-pin from the CLI)

``source`` is one of tray | dashboard | control_api (default control_api); it is
recorded in the removal history. Errors raise ``ActionError`` (a 4xx answer).
"""

from __future__ import annotations

from typing import Any

from scalpel_desktop.errors import ActionError
from scalpel_desktop.tools import removals
from scalpel_desktop.tools.listing import inventory_listing
from scalpel_desktop.tools.store import SOURCES, ToolStore
from scalpel_desktop.tools.suggest import build_report

OPS = ("remove", "restore", "on", "off", "list", "suggest", "history", "forget_pins")


def register(runtime: Any) -> None:
    runtime.register_action("tools", lambda payload: handle(runtime, payload))


def _error(message: str) -> ActionError:
    return ActionError(message, status=400, title="Tools")


def _filter_stages(runtime: Any) -> list[Any]:
    pipeline = runtime.pipeline
    stage = pipeline.get("tool_filter") if pipeline is not None else None
    return [stage] if stage is not None else []


def handle(runtime: Any, payload: dict) -> dict:
    if not isinstance(payload, dict):
        raise _error("tools: expected a JSON object")
    op = payload.get("op")
    if op not in OPS:
        raise _error(f"tools: op must be one of {', '.join(OPS)}")
    source = payload.get("source", "control_api")
    if source not in SOURCES:
        raise _error(f"tools: source must be one of {', '.join(SOURCES)}")
    store = ToolStore.open()
    try:
        if op == "remove":
            try:
                res = removals.remove(store, str(payload.get("name", "")), source=source,
                                      force=bool(payload.get("force")), now=bool(payload.get("now")))
            except removals.RemovalError as e:
                raise _error(str(e)) from None
        elif op == "restore":
            res = removals.restore(store, str(payload.get("name", "")), source=source, now=bool(payload.get("now")))
        elif op in ("on", "off"):
            on = op == "on"
            was = bool(runtime.setting("tool_filter"))
            runtime.set_settings({"tool_filter": on})
            if was != on:
                store.record(op, "", source)
            res = {"tool_filter": on, "changed": was != on}
        elif op == "list":
            cfg = type("_Live", (), {"get": staticmethod(runtime.setting)})()
            res = inventory_listing(store, cfg)
        elif op == "suggest":
            res = build_report(store, prices=runtime.prices)
        elif op == "history":
            res = {"history": store.history()}
        else:
            res = {}
        if op == "forget_pins" or payload.get("now"):
            for stage in _filter_stages(runtime):
                stage.pins.forget()
        return {"ok": True, "op": op, **res}
    finally:
        store.close()
