"""Runs stages in order; an exception anywhere forwards the original bytes.

Like mitmproxy's ``safecall``: a stage that raises is logged and the chain goes
on, but any change already made to the body is dropped (fail-open), and the
decision says so.

Nothing outside looks inside a chain: ``get(name)`` finds a stage,
``observe_only()`` says whether no stage that could change a body would run
now, ``stages`` is read only by the composer's ``close_stages``.
"""

from __future__ import annotations

import logging
from typing import Any, Callable, Sequence

from scalpel_desktop.exchange import ApiRequest, Decision, Exchange, ResponseResult, Stage
from scalpel_desktop.wire.jsoncodec import too_deep

log = logging.getLogger("scalpel.pipeline")


class Chain:
    def __init__(self, stages: Sequence[Stage], paused: Callable[[], bool] = lambda: False):
        self.stages = list(stages)
        self.paused = paused

    def get(self, name: str) -> Any:
        """The stage called ``name``, or None."""
        for stage in self.stages:
            if getattr(stage, "name", None) == name:
                return stage
        return None

    def observe_only(self) -> bool | None:
        """When no stage that could change a body would run (paused, or every stage
        observes), the pause switch as read now (``True``/``False``); else None."""
        try:
            if self.paused():
                return True
        except Exception:  # noqa: BLE001
            return None
        return None if any(getattr(s, "mutates", True) for s in self.stages) else False

    def process(self, request: ApiRequest, *, paused: bool | None = None) -> Exchange:
        """``paused``: the caller's own reading of the pause switch, taken when it
        decided how to forward the request (it must not change between that
        decision and this run); None reads it now."""
        ex = Exchange(request=request)
        if paused is None:
            paused = _safe_bool(self.paused)
        for stage in self.stages:
            if paused and getattr(stage, "mutates", True):
                continue
            try:
                stage.on_request(ex)
            except Exception as e:  # noqa: BLE001 - fail open, always
                ex.new_body = None
                if too_deep(e):
                    # Not a body the pipeline understands: forwarded as sent, and the
                    # stages after this one see no JSON (they would fail the same way).
                    log.info("stage %s: the body nests deeper than the JSON codec writes; forwarded as sent", stage.name)
                    ex.set_doc(None)
                    ex.decision = Decision("unchanged", "body nests deeper than the JSON codec writes: forwarded as sent")
                    continue
                log.exception("stage %s failed on request; forwarding the original bytes", stage.name)
                ex.decision = Decision("error", f"{stage.name}: {type(e).__name__}: {e}"[:300])
        if paused and not ex.decision.changes and ex.decision.action == "unchanged":
            ex.decision = Decision("paused", "paused: pass-through")
        return ex

    def complete(self, ex: Exchange, result: ResponseResult) -> None:
        ex.response = result
        for stage in self.stages:
            try:
                stage.on_response(ex)
            except Exception:  # noqa: BLE001
                log.exception("stage %s failed on response", stage.name)


def _safe_bool(fn: Callable[[], bool]) -> bool:
    try:
        return bool(fn())
    except Exception:  # noqa: BLE001
        return False
