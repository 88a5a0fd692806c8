"""``running_emulator()``: the emulated upstream for tests and benchmarks.

    with running_emulator(script) as emu:
        client = anthropic.Anthropic(base_url=emu.url, api_key="k")
        ...
        assert emu.received[-1].body == sent_bytes
        assert emu.bills[-1].cache_read == 3500

The handle (``EmulatorHandle``):

* ``url`` - ``http://127.0.0.1:PORT`` (Anthropic base URL; OpenAI clients use ``url + "/v1"``)
* ``received`` - every request so far (``RecordedRequest``: ``.path``, ``.query``,
  ``.headers``, ``.body`` bytes, ``.usage``, ``.status``, ``.track``, ``.turn``, ``.json()``)
* ``api_requests`` - the received ``/v1/messages``, chat and responses requests only
* ``bills`` - the ``Usage`` of every billed request, in order
* ``set_script(script)`` - a ``Script``, a callable, or a name from ``emulator.scripts``
* ``fault(kind, count=1, **opts)`` - see ``emulator.faults``
* ``cache_diagnosis(mode)`` - how the cache-diagnosis beta is answered (``emulator.diagnostics``)
* ``advance(seconds)`` / ``offset`` / ``set_now(t)`` / ``now()`` - the emulator's clock
  (``clock.now()``, which honours ``SCALPEL_TEST_CLOCK_FILE``, plus ``offset``)
* ``clear(cache=False)``, ``stop()``; ``emulator`` - the ``Emulator`` itself
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

from scalpel_desktop.wire.usage import Usage
from scalpel_desktop.emulator.faults import Fault
from scalpel_desktop.emulator.record import RecordedRequest
from scalpel_desktop.emulator.runner import EmulatorThread
from scalpel_desktop.emulator.script import ScriptLike
from scalpel_desktop.emulator.server import Emulator


class EmulatorHandle:
    def __init__(self, emulator: Emulator, thread: EmulatorThread):
        self.emulator = emulator
        self._thread = thread

    @property
    def url(self) -> str:
        return self._thread.url

    @property
    def port(self) -> int:
        return self._thread.port

    @property
    def openai_url(self) -> str:
        return self.url + "/v1"

    @property
    def received(self) -> list[RecordedRequest]:
        return self.emulator.received

    @property
    def api_requests(self) -> list[RecordedRequest]:
        return [r for r in self.received if r.endpoint in ("messages", "chat", "responses")]

    @property
    def bills(self) -> list[Usage]:
        return [r.usage for r in self.received if r.usage is not None]

    @property
    def cache(self):
        return self.emulator.cache

    def set_script(self, script: ScriptLike | str, **kwargs: Any) -> None:
        if isinstance(script, str):
            from scalpel_desktop.emulator.scripts import named_script

            script = named_script(script, **kwargs)
        self.emulator.set_script(script)

    def fault(self, kind: str | int, count: int = 1, **opts: Any) -> Fault:
        return self.emulator.fault(kind, count, **opts)

    def advance(self, seconds: float) -> None:
        self.emulator.advance(seconds)

    def cache_diagnosis(self, mode: str) -> None:
        """How the cache-diagnosis beta is answered from now: ``beta``, ``unknown_beta``, ``unknown_field``."""
        self.emulator.diagnosis.set_mode(mode)

    @property
    def offset(self) -> float:
        return self.emulator.offset

    @offset.setter
    def offset(self, seconds: float) -> None:
        self.emulator.offset = seconds

    def now(self) -> float:
        return self.emulator.now()

    def set_now(self, t: float) -> None:
        self.emulator.set_now(t)

    def clear(self, cache: bool = False) -> None:
        self.emulator.clear(cache=cache)

    def stop(self) -> None:
        self._thread.stop()


@contextlib.contextmanager
def running_emulator(script: ScriptLike | str | None = None, *, port: int = 0, **opts: Any) -> Iterator[EmulatorHandle]:
    """Run an emulator on a free 127.0.0.1 port in a background thread.

    ``opts`` go to ``Emulator`` (``min_cacheable``, ``lookback``, ``refresh``, ``require_auth``,
    ``chunk_delay``, ``compress``, ``cache_diagnosis``)."""
    emulator = Emulator(None, **opts)
    thread = EmulatorThread(emulator, port=port).start()
    handle = EmulatorHandle(emulator, thread)
    if script is not None:
        handle.set_script(script)
    try:
        yield handle
    finally:
        thread.stop()
